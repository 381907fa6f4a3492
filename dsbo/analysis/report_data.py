"""What the HTML report shows, gathered from a campaign: :class:`ReportData`.

:func:`from_campaign` reads a campaign as data: its history (named parameters in user values),
which panels apply (several objectives, contexts, a sparsity-aware method, a budget in cost
units, MOBO-RS's preference region, the learning curves the trials reported), the configuration
and the environment; and it fits the
campaign's own surrogate on the completed trials (same spec, seed and outcome warping) for the
parameter importance and the slices (:mod:`dsbo.analysis.importance`). A surrogate that keeps
fit states (``map-saas``, ``gp``; :mod:`dsbo.surrogates.warm_start`) starts from the
hyperparameters the campaign's last fit found, kept in its store, and is fitted once from
there (:data:`FROM_LAST_FIT`: no multi-start refit, whatever the campaign's restart schedule
says); without a usable state (another surrogate, a store without one, data that are not the
last fit's plus new points) it is fitted as the campaign's next step would fit it
(:func:`fit_campaign_model`). A surrogate that cannot be fitted leaves those panels out and
says why, in the report.

Importing this module imports neither torch nor BoTorch: a report without the model
(``--no_model``) needs neither.
"""

from __future__ import annotations

import math
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import metadata
from typing import TYPE_CHECKING, Any

from dsbo.analysis.report_figures import MAX_SLICES
from dsbo.analysis.summary import value_vs_changes
from dsbo.space import SearchSpace

if TYPE_CHECKING:
    import pandas as pd

    from dsbo.analysis.importance import Importance, Slice

#: Packages whose versions the report lists.
PACKAGES = (
    "dsbo",
    "torch",
    "botorch",
    "gpytorch",
    "pytorch-lightning",
    "plotly",
    "numpy",
    "pandas",
)


@dataclass
class ReportData:
    """A run as the report shows it (see the module docstring)."""

    title: str
    space: SearchSpace
    #: One row per trial (``history.csv``'s columns).
    frame: pd.DataFrame
    objective_names: list[str]
    multi_objective: bool = False
    #: Per objective, ``+1`` maximized or ``-1`` minimized (the frame holds the user's values).
    signs: list[float] = field(default_factory=list)
    optimal_value: float | None = None
    #: The budget is in cost units: the history is drawn against the cumulative cost.
    cost_budget: bool = False
    #: A sparsity-aware method ran (SEBO, IR/ER, BONSAI): changes per trial are shown.
    sparsity: bool = False
    changes_from: str = "problem default"
    num_relevant: int | None = None
    context_names: list[str] = field(default_factory=list)
    #: MOBO-RS's weight prior as boxes of the objective space ``[[low, high] per objective]``.
    preference_boxes: list[list[list[float]]] = field(default_factory=list)
    #: The trials' learning curves in the user's direction (:func:`dsbo.analysis.curves.user_curves`:
    #: ``{"trial", "status", "steps", "values", "reason"}`` each); empty when none reported.
    curves: list[dict[str, Any]] = field(default_factory=list)
    #: A full trial's steps (the campaign's ``max_steps``), when early stopping set it.
    max_steps: int | None = None
    value_vs_changes: list[dict[str, float]] = field(default_factory=list)
    #: The surrogate the importance and slices come from (its name), and why not if they don't.
    surrogate: str = ""
    model_note: str | None = None
    importance: list[Importance] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    #: How the fit for importance and slices started, per output (not shown): ``"warm"``
    #: (from the campaign's last fit) or the reason of a full fit (``"no previous fit"``, ...).
    model_fit: list[str | None] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    def sign(self, i: int = 0) -> float:
        return self.signs[i] if i < len(self.signs) else 1.0

    def label(self, i: int = 0) -> str:
        """``"loss (lower is better)"``."""
        return f"{self.objective_names[i]} ({'lower' if self.sign(i) < 0 else 'higher'} is better)"

    @property
    def completed(self) -> pd.DataFrame:
        return self.frame[self.frame["status"] == "completed"]

    def with_frame(self, frame: pd.DataFrame) -> ReportData:
        return replace(self, frame=frame)

    def best_trials(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` best completed trials (by the first objective), best first."""
        done = self.completed
        if done.empty:
            return done
        columns = ["trial", "generator", *self.space.searched, *self.objective_names]
        if self.sparsity:
            columns.append("num_changed")
        return done.sort_values(self.objective_names[0], ascending=self.sign(0) < 0).head(k)[
            columns
        ]

    def stopped_trials(self, k: int = 50) -> pd.DataFrame:
        """The first ``k`` trials stopped early, in trial order: their parameters, last
        reported value (under the objective's name), status, ``last step`` and the rule's
        ``reason``."""
        stopped = self.frame[self.frame["status"] == "stopped"]
        if stopped.empty:
            return stopped
        columns = ["trial", "status", "generator", *self.space.searched, *self.objective_names]
        table = stopped.head(k)[columns].copy()
        curves = {c["trial"]: c for c in self.curves}
        table["last step"] = [
            curves[t]["steps"][-1] if t in curves and curves[t]["steps"] else None
            for t in table["trial"]
        ]
        table["reason"] = [curves[t].get("reason") if t in curves else None for t in table["trial"]]
        return table


def environment(seed: int | None = None) -> dict[str, Any]:
    """Python, the platform, the versions of :data:`PACKAGES` and the seed."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "seed": seed,
        **versions,
    }


def is_sparsity_aware(policy: Any) -> bool:
    """SEBO / IR / ER (a policy with a sparsity target) or a post-processor (BONSAI)."""
    return (
        getattr(policy, "sparsity_target", None) is not None
        or getattr(policy, "postprocessor", None) is not None
    )


def _preference_boxes(policy: Any, problem: Any) -> list[list[list[float]]]:
    prior = getattr(policy, "prior", None)
    if not callable(prior) or not problem.is_multi_objective:
        return []
    signs = problem.outcomes.signs
    return [
        [
            sorted([sign * float(lo), sign * float(hi)])
            for lo, hi, sign in zip(r.lower, r.upper, signs, strict=True)
        ]
        for r in prior(problem).regions
    ]


#: Surrogate options under which a factory that keeps fit states starts from the stored state
#: of the campaign's last fit and fits once from there, whatever the restart schedule says.
FROM_LAST_FIT = {
    "warm_start": True,
    "restart_every": 2**31 - 1,
    "restart_after_points": 2**31 - 1,
    "restart_drop": math.inf,
}


def fit_campaign_model(campaign: Any, from_last_fit: bool = False) -> Any:
    """The campaign's surrogate fitted on its completed trials, as its next step would fit it
    (``None`` with fewer than two completed trials).

    With ``from_last_fit``, a surrogate that keeps fit states takes the options of
    :data:`FROM_LAST_FIT` that it accepts: it starts from the campaign's last fit and is fitted
    once from there (a full fit still runs when the store holds no usable state)."""
    import torch

    if campaign.store.count("completed") < 2:
        return None
    torch.manual_seed(campaign.seed)
    spec = campaign.surrogate
    options = _from_last_fit_options(spec.name) if from_last_fit else {}
    if not options:
        return campaign.fit_model()
    campaign.surrogate = replace(spec, options={**spec.options, **options})
    try:
        return campaign.fit_model()
    finally:
        campaign.surrogate = spec


def _from_last_fit_options(name: str) -> dict[str, Any]:
    """The options of :data:`FROM_LAST_FIT` that surrogate ``name`` takes (none unless it
    keeps fit states)."""
    from dsbo.registry import accepted_options
    from dsbo.surrogates.registry import SURROGATES

    accepted = accepted_options(SURROGATES.get(name)) or set()
    if "previous_fit" not in accepted:
        return {}
    return {k: v for k, v in FROM_LAST_FIT.items() if k in accepted}


def from_campaign(
    campaign: Any, config: dict[str, Any] | None = None, model: bool = True, result: Any = None
) -> ReportData:
    """The report's data for ``campaign``; ``config`` is the run's configuration as the user
    wrote it (default: the campaign's settings); ``model=False`` skips the surrogate;
    ``result``: ``campaign.result()`` when the caller has it already."""
    from dsbo.analysis.curves import user_curves
    from dsbo.campaign.history import add_steps

    problem, policy = campaign.problem, campaign.policy
    result = result if result is not None else campaign.result()
    curves = user_curves(campaign.store, problem)
    frame = add_steps(
        result.history,
        {c["trial"]: list(zip(c["steps"], c["values"], strict=True)) for c in curves},
        problem,
    )
    data = ReportData(
        title=problem.name,
        space=problem.space,
        frame=frame,
        objective_names=list(problem.outcomes.objective_names),
        multi_objective=problem.is_multi_objective,
        signs=list(problem.outcomes.signs),
        optimal_value=problem.optimal_value,
        cost_budget=campaign.budget_cost is not None,
        sparsity=is_sparsity_aware(policy),
        changes_from=campaign.changes_from,
        num_relevant=len(problem.relevant_dims) or None,
        context_names=list(problem.context_names) if problem.is_contextual else [],
        preference_boxes=_preference_boxes(policy, problem),
        curves=curves,
        max_steps=getattr(getattr(campaign, "early_stopping", None), "max_steps", None),
        value_vs_changes=value_vs_changes(result.history, problem),
        surrogate=campaign.surrogate.name,
        config=config or campaign_settings(campaign),
        environment=environment(campaign.seed),
    )
    if model:
        add_model_panels(data, campaign, result.best_x)
    return data


def campaign_settings(campaign: Any) -> dict[str, Any]:
    """What a campaign built in Python was given (the report's configuration section)."""
    policy = campaign.policy
    postprocessor = getattr(policy, "postprocessor", None)
    context_policy = getattr(getattr(campaign, "context_step", None), "policy", None)
    return {
        "problem": campaign.problem.name,
        "parameters": campaign.problem.space.to_config(),
        "surrogate": {"name": campaign.surrogate.name, **campaign.surrogate.options},
        "acquisition": getattr(policy, "name", type(policy).__name__),
        "postprocess": None if postprocessor is None else type(postprocessor).__name__,
        "contexts": getattr(context_policy, "name", None),  # the context policy of a contextual run
        "budget": campaign.budget,
        "budget_cost": campaign.budget_cost,
        "n_init": campaign.n_init,
        "q": campaign.q,
        "seed": campaign.seed,
    }


def add_model_panels(data: ReportData, campaign: Any, best_x: list[float] | None) -> bool:
    """Fit the campaign's surrogate (from its last fit, :func:`fit_campaign_model`) and fill
    in the importance and the slices (or, when the fit fails, the note saying why: ``False``)."""
    return fill_model_panels(data, lambda: fit_campaign_model(campaign, from_last_fit=True), best_x)


def fill_model_panels(data: ReportData, fit: Callable[[], Any], best_x: list[float] | None) -> bool:
    """The importance and the slices of the model ``fit()`` returns (``None``: fewer than two
    completed trials), or the note saying why there are none; ``best_x``: the best point.
    ``False`` when the fit or reading the model failed (the note says how)."""
    import warnings

    from dsbo.analysis.importance import parameter_importance, slices

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit()
            if model is None:
                data.model_note = (
                    "fewer than two completed trials: no surrogate to read importance from"
                )
                return True
            data.model_fit = [getattr(s, "start", None) for s in getattr(model, "fit_states", [])]
            m = len(data.objective_names)
            data.importance = parameter_importance(
                model, data.space, data.objective_names, list(range(m))
            )
            if best_x is not None and not data.multi_objective:
                data.slices = slices(
                    model, data.space, best_x, data.importance[0].ranking[:MAX_SLICES]
                )
                if (
                    data.sign(0) < 0
                ):  # the model is fitted in the maximization sense: show the user's
                    for s in data.slices:
                        s.mean = [-v for v in s.mean]
    except Exception as exc:  # a report never fails because the surrogate does
        data.importance, data.slices = [], []
        data.model_note = (
            f"the {data.surrogate} surrogate could not be read: {type(exc).__name__}: {exc}"
        )
        return False
    return True
