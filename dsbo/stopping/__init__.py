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

:func:`make_rule` builds a rule from a config: ``None`` or ``"none"`` (no early stopping), a
name, a mapping ``{"name": ..., **options}``, or a rule (returned as is). Every option is
checked when the rule is made, before anything runs.

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
from dsbo.stopping.base import Decision, StoppingRule, TrialCurve
from dsbo.stopping.percentile import MedianRule, PercentileRule
from dsbo.stopping.successive_halving import ASHARule, HyperbandRule

#: The rules by config name (``"successive-halving"`` is another name of ``"asha"``).
RULES: dict[str, type[StoppingRule]] = {
    "median": MedianRule,
    "percentile": PercentileRule,
    "asha": ASHARule,
    "successive-halving": ASHARule,
    "hyperband": HyperbandRule,
}
#: The config name of "no early stopping".
NONE = "none"


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else "."


def rule_options(name: str) -> list[str]:
    """The options the rule ``name`` takes, in its constructor's order."""
    params = inspect.signature(RULES[name].__init__).parameters.values()
    return [p.name for p in params if p.name != "self"]


def make_rule(spec: object) -> StoppingRule | None:
    """The stopping rule a config asks for; ``None`` for no early stopping.

    Args:
        spec: ``None`` or ``"none"``; a rule name (:data:`RULES`); a mapping ``{"name": ...,
            **options}``; or a :class:`StoppingRule` (returned as is).

    Raises:
        ConfigError: An unknown name or option (naming it, with the valid choices and the
            closest one), or an option of the wrong type or out of range.
    """
    if spec is None:
        return None
    if isinstance(spec, StoppingRule):
        return spec
    choices = [NONE, *RULES]
    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, Mapping):
        options = dict(spec)
        if "name" not in options:
            raise ConfigError(f"stopping.name is missing; choose one of: {', '.join(choices)}")
        name = options.pop("name")
        if not isinstance(name, str):
            raise ConfigError(f"stopping.name must be a string, one of: {', '.join(choices)}; got {name!r}")
    else:
        raise ConfigError(
            f"stopping must be none, a rule name, a mapping with a name, or a StoppingRule; got {spec!r} ({type(spec).__name__})"
        )
    if name == NONE:
        if options:
            raise ConfigError(f"stopping.name='none' takes no options, got {sorted(map(str, options))}")
        return None
    if name not in RULES:
        raise ConfigError(f"stopping.name={name!r} is not a stopping rule{_did_you_mean(name, choices)} Choose one of: {', '.join(choices)}")
    accepted = rule_options(name)
    for key in options:
        if not isinstance(key, str) or key not in accepted:
            hint = _did_you_mean(key, accepted) if isinstance(key, str) else "."
            raise ConfigError(f"stopping.{key} is not an option of {name!r}{hint} Its options are: {', '.join(accepted)}")
    kwargs: dict[str, Any] = options
    return RULES[name](**kwargs)


__all__ = [
    "ASHARule",
    "Decision",
    "HyperbandRule",
    "MedianRule",
    "NONE",
    "PercentileRule",
    "RULES",
    "StoppingRule",
    "TrialCurve",
    "make_rule",
    "rule_options",
]
