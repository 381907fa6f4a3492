"""Early-stopping rules: pure decisions over learning curves (issue 42).

A rule looks at the curve of a running trial that has just reported and the curves of every
other trial of the campaign, and says whether to stop it (:class:`StoppingRule`,
:class:`TrialCurve`, :class:`Decision` in :mod:`~dsbo.stopping.base`). Rules hold no state
between calls: a resumed campaign decides exactly as an uninterrupted one. Values are in the
maximization sense, as the store keeps them. The store and the campaign feed the rules; this
package never reads the store or the runtime.

=========================  ==========================  =============================================
name                       class                       peers
=========================  ==========================  =============================================
``"median"``               :class:`MedianRule`         Optuna ``MedianPruner``; Ray
                                                       ``MedianStoppingRule``; Vizier
``"percentile"``           :class:`PercentileRule`     Optuna ``PercentilePruner``; Ax
                                                       ``PercentileEarlyStoppingStrategy``
``"asha"``                 :class:`ASHARule`           Optuna ``SuccessiveHalvingPruner``; Ray
(``"successive-halving"``)                             ``ASHAScheduler``
``"hyperband"``            :class:`HyperbandRule`      Optuna ``HyperbandPruner``; Ray
                                                       ``AsyncHyperBandScheduler(brackets=...)``;
                                                       W&B ``early_terminate: hyperband``
=========================  ==========================  =============================================

dsbo uses Optuna's option names, and its semantics (checked against optuna 5.0 by the tests).
Peer option names -> dsbo (``~``: close, not identical):

=================================  ===================================  =========================
peer option                        dsbo option                          rules
=================================  ===================================  =========================
Optuna ``percentile``              ``percentile`` (top % kept)          percentile
Optuna ``n_startup_trials``        ``n_startup_trials``                 median, percentile
Optuna ``n_warmup_steps``          ``n_warmup_steps``                   median, percentile
Optuna ``interval_steps``          ``interval_steps``                   median, percentile
Optuna ``n_min_trials``            ``n_min_trials``                     median, percentile
Optuna ``min_resource``            ``min_resource``                     asha, hyperband
Optuna ``max_resource``            ``max_resource``                     hyperband
Optuna ``reduction_factor``        ``reduction_factor``                 asha, hyperband
Optuna ``min_early_stopping_rate`` ``min_early_stopping_rate``          asha
Optuna ``bootstrap_count``         ``bootstrap_count``                  asha, hyperband
Ray ``grace_period``               ``min_resource`` (ASHA);             asha, hyperband; median
                                   ~ ``n_warmup_steps`` (median)
Ray ``max_t``                      ``max_resource``                     hyperband (ASHA: the
                                                                        caller's budget)
Ray ``reduction_factor``           ``reduction_factor``                 asha, hyperband
Ray ``brackets``                   (from ``max_resource``)              hyperband
Ray ``min_samples_required``       ~ ``n_startup_trials``               median
W&B ``min_iter``                   ``min_resource``                     hyperband
W&B ``max_iter``                   ``max_resource``                     hyperband
W&B ``eta``                        ``reduction_factor``                 hyperband
Ax ``percentile_threshold`` = q    ``percentile`` = 100 - q             percentile
Ax ``min_progression``             ~ ``n_warmup_steps``                 percentile
Ax ``min_curves``                  ~ ``n_startup_trials``               percentile
=================================  ===================================  =========================

The rules register by name (:func:`~dsbo.stopping.catalogue.register_stopping_rule`, in the
module that defines each); :data:`~dsbo.stopping.catalogue.STOPPING_RULES` is the registry,
whose catalogue names the module of every rule dsbo ships, so the names are known without
importing a rule (``STOPPING_RULES.names()``), and importing this package loads none of them.
The table above lists those names (``tests/stopping/test_make_rule.py`` checks it against the
registry); ``available_stopping_rules()`` lists every registered rule, a plugin's too. A new
rule is one module, one decorator and one test (docs/contributing.md).

:func:`make_rule` builds a rule from a config: ``None`` or ``"none"`` (no early stopping), a
registered name, a mapping ``{"name": ..., **options}``, or a rule (returned as is). Every
option is checked when the rule is made, before anything runs.

Example:
    >>> make_rule({"name": "asha", "reduction_factor": 4})
    ASHARule(min_resource=1, reduction_factor=4, min_early_stopping_rate=0, bootstrap_count=0)
    >>> make_rule("none") is None
    True

May import: errors, registry, the standard library and numpy; never torch, the store, the
campaign or the runtime.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from dsbo.errors import ConfigError
from dsbo.registry import lazy_exports
from dsbo.stopping.base import Decision, StoppingRule, TrialCurve
from dsbo.stopping.catalogue import (
    STOPPING_RULES,
    available_stopping_rules,
    register_stopping_rule,
)

#: The config name of "no early stopping".
NONE = "none"

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "MedianRule": "dsbo.stopping.percentile",
        "PercentileRule": "dsbo.stopping.percentile",
        "ASHARule": "dsbo.stopping.successive_halving",
        "HyperbandRule": "dsbo.stopping.successive_halving",
    },
)


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else "."


def rule_choices() -> list[str]:
    """What ``early_stopping`` may name: ``"none"`` and every registered rule (imports no
    rule module)."""
    return [NONE, *STOPPING_RULES.names()]


def rule_options(name: str) -> list[str]:
    """The options the rule ``name`` takes, in its constructor's order."""
    params = inspect.signature(STOPPING_RULES.get(name)).parameters.values()
    return [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def make_rule(spec: object) -> StoppingRule | None:
    """The stopping rule a config asks for; ``None`` for no early stopping.

    Args:
        spec: ``None`` or ``"none"``; a registered rule name
            (:data:`~dsbo.stopping.catalogue.STOPPING_RULES`); a mapping ``{"name": ...,
            **options}``; or a :class:`StoppingRule` (returned as is).

    Raises:
        ConfigError: An unknown name or option (naming it, with the valid choices and the
            closest one), or an option of the wrong type or out of range.
    """
    if spec is None:
        return None
    if isinstance(spec, StoppingRule):
        return spec
    choices = rule_choices()
    listed = ", ".join(choices)
    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, Mapping):
        options = dict(spec)
        if "name" not in options:
            raise ConfigError(f"stopping.name is missing; choose one of: {listed}")
        name = options.pop("name")
        if not isinstance(name, str):
            raise ConfigError(f"stopping.name must be a string, one of: {listed}; got {name!r}")
    else:
        raise ConfigError(
            "stopping must be none, a rule name, a mapping with a name, or a StoppingRule; "
            f"got {spec!r} ({type(spec).__name__})"
        )
    if name == NONE:
        if options:
            raise ConfigError(
                f"stopping.name='none' takes no options, got {sorted(map(str, options))}"
            )
        return None
    if name not in STOPPING_RULES:
        raise ConfigError(
            f"stopping.name={name!r} is not a stopping rule{_did_you_mean(name, choices)} "
            f"Choose one of: {listed}"
        )
    accepted = rule_options(name)
    for key in options:
        if not isinstance(key, str) or key not in accepted:
            hint = _did_you_mean(key, accepted) if isinstance(key, str) else "."
            raise ConfigError(
                f"stopping.{key} is not an option of {name!r}{hint} "
                f"Its options are: {', '.join(accepted) or 'none'}"
            )
    kwargs: dict[str, Any] = options
    rule = STOPPING_RULES.get(name)(**kwargs)
    if not isinstance(rule, StoppingRule):
        raise ConfigError(
            f"stopping.name={name!r}: its factory made a {type(rule).__name__}, not a StoppingRule"
        )
    return rule


__all__ = [
    "ASHARule",
    "Decision",
    "HyperbandRule",
    "MedianRule",
    "NONE",
    "PercentileRule",
    "STOPPING_RULES",
    "StoppingRule",
    "TrialCurve",
    "available_stopping_rules",
    "make_rule",
    "register_stopping_rule",
    "rule_choices",
    "rule_options",
]
