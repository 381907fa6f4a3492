"""The configuration of a BO campaign (``python -m dsbo.optimize``), as typed dataclasses.

jsonargparse turns these into the CLI: a YAML file (``--config configs/bo/default.yaml``) and
dotted overrides (``--surrogate.name gp --budget 50``), with type errors that name the key.
:func:`validate_config` then checks values and registry names, raising
:class:`~dsbo.errors.ConfigError` naming the field.
"""

from __future__ import annotations

import copy
import math
import os
import types
import typing
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from dsbo.acquisition.settings import OptimizerSettings
from dsbo.contexts.settings import ContextSettings
from dsbo.errors import ConfigError

#: Largest budget a config may ask for (a guard against typos such as an extra zero or two).
MAX_BUDGET = 1_000_000
#: ``threads`` may oversubscribe the cores at most this many times.
MAX_THREADS_PER_CORE = 4


@dataclass
class ProblemConfig:
    """``name``: a registered problem (``python -m dsbo.optimize --list``); ``options``: its
    keyword options, e.g. ``{target: zero, noise_std: 0.1}``."""

    name: str = "branin-20d"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class SurrogateConfig:
    """``name``: a registered surrogate; ``options``: its keyword options; ``selector``: fit it
    on a subset of the data, e.g. ``{name: kcs, alpha: 20}`` (:mod:`dsbo.surrogates.selection`)."""

    name: str = "map-saas"
    options: dict[str, Any] = field(default_factory=dict)
    selector: dict[str, Any] | None = None


@dataclass
class AcquisitionConfig(OptimizerSettings):
    """``name``: a registered policy (``auto`` = qlognei, or qlognehvi for several objectives);
    ``options``: the policy's options; the inherited fields configure
    ``botorch.optim.optimize_acqf`` (see :class:`~dsbo.acquisition.base.OptimizerSettings`)."""

    name: str = "auto"
    options: dict[str, Any] = field(default_factory=dict)

    def optimizer_settings(self) -> OptimizerSettings:
        return OptimizerSettings(
            **{f.name: getattr(self, f.name) for f in fields(OptimizerSettings)}
        )


@dataclass
class InitialDesignConfig:
    """``include_default``: evaluate the problem's default point first, then ``n_init``
    Sobol points (``n_init + 1`` initial evaluations, all within the budget)."""

    include_default: bool = False


@dataclass
class WandbConfig:
    """W&B tracking. ``offline`` (default) writes the run under the run directory and needs no
    account; ``online`` uploads (``wandb login`` first); ``disabled`` turns it off."""

    mode: Literal["offline", "online", "disabled"] = "offline"
    project: str = "dsbo"
    entity: str | None = None
    name: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class ExecutorConfig:
    """Where evaluations run, ``workers`` at a time (each new proposal conditioned on the
    pending ones, :mod:`dsbo.runtime.parallel`). ``kind: process``: a
    :class:`~dsbo.runtime.executors.WorkerPool` of local processes; ``kind: dask``: Dask's
    ``distributed``, a ``LocalCluster`` of ``workers`` processes or, with ``address``
    (``tcp://host:8786``), an existing cluster's scheduler."""

    kind: Literal["process", "dask"] = "process"
    workers: int = 2
    address: str | None = None


#: The post-processing of a config that does not name one: BONSAI toward the problem's default.
DEFAULT_POSTPROCESS: dict[str, dict[str, Any]] = {"bonsai": {"rho": 0.2}}


@dataclass
class OptimizeConfig:
    """A BO campaign: which problem, surrogate and acquisition, how many evaluations, where.

    The built-in default (no arguments) optimizes Branin embedded in 20 dimensions with a
    MAP-SAAS ensemble and qLogNEI + BONSAI in 30 evaluations: 10 Sobol points, then 20 BO
    steps whose candidates are pruned toward the problem's default point. ``postprocess``
    names one post-processor of the acquisition's candidates and its options (default
    :data:`DEFAULT_POSTPROCESS`, BONSAI with ``rho = 0.2``; ``null`` for plain BO; a
    contextual problem, which chooses with its ``contexts`` policy, drops the default).
    ``budget_cost`` is a budget in cost units (contextual problems: ``lambda_x`` plus the costs
    of optimized contexts per evaluation); with ``budget: null`` it alone ends the run.
    ``store`` is where the trials live: ``null`` for ``<run_dir>/trials.sqlite``, another
    SQLite path, or a ``postgresql://`` URL that several workers share (``lease``: seconds a
    dead worker's trial waits before another worker retries it). ``executor`` runs
    ``executor.workers`` evaluations at once (:class:`ExecutorConfig`). ``outcome_warping``
    fits the surrogate to warped objective values (``copula``: normal scores of the ranks;
    ``winsorize``: the bad tail clipped; :mod:`dsbo.campaign.outcome_warping`).
    ``early_stopping`` stops trials whose reported intermediate values lag (``true``: the
    recommended setting, ASHA with the surrogate fitted on every ended trial's last value; a
    rule name of :mod:`dsbo.stopping`, e.g. ``asha``, or a mapping ``{name: asha, min_resource: 1,
    reduction_factor: 3, model: bohb}``; ``null``: none); ``max_steps`` is the steps (epochs)
    of a full trial and ``budget_steps`` a budget in steps, each trial charged the steps it
    used (:mod:`dsbo.campaign.early_stopping`). Trials report with ``python -m dsbo.blackbox
    report``.
    """

    problem: ProblemConfig = field(default_factory=ProblemConfig)
    surrogate: SurrogateConfig = field(default_factory=SurrogateConfig)
    acquisition: AcquisitionConfig = field(default_factory=AcquisitionConfig)
    postprocess: dict[str, dict[str, Any] | None] | None = field(
        default_factory=lambda: copy.deepcopy(DEFAULT_POSTPROCESS)
    )
    budget: int | None = 30
    budget_cost: float | None = None
    contexts: ContextSettings | None = None
    n_init: int | None = 10
    initial_design: InitialDesignConfig = field(default_factory=InitialDesignConfig)
    q: int = 1
    seed: int = 0
    run_dir: str | None = None
    threads: int | None = 1
    on_pending: Literal["retry", "abandon"] = "retry"
    outcome_warping: Literal["copula", "winsorize"] | None = None
    early_stopping: bool | str | dict[str, Any] | None = None
    max_steps: int | None = None
    budget_steps: int | None = None
    max_consecutive_failures: int = 10
    eval_timeout: float | None = None
    store: str | None = None
    executor: ExecutorConfig | None = None
    lease: float = 60.0
    progress: bool = True
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate_config(cfg: OptimizeConfig) -> None:
    """Check values jsonargparse's types cannot express; raise ConfigError naming the field."""
    from dsbo.acquisition.catalogue import POLICIES, POSTPROCESSORS
    from dsbo.campaign.execution import MAX_SEED
    from dsbo.surrogates.catalogue import SURROGATES

    for name in ("problem", "surrogate", "acquisition", "wandb", "initial_design"):
        if getattr(cfg, name) is None:
            raise ConfigError(
                f"{name} is null; give it a mapping (or leave it out for the default)"
            )
    if cfg.budget_cost is not None and not 0 < cfg.budget_cost < math.inf:
        raise ConfigError(f"budget_cost must be a number > 0, got {cfg.budget_cost}")
    if cfg.budget is None and cfg.budget_cost is None and cfg.budget_steps is None:
        raise ConfigError(
            "budget is null; give budget (evaluations), budget_cost (cost units) or budget_steps (steps)"
        )
    check_early_stopping(cfg)
    # with budget null the trial budget follows from budget_cost and what a trial is charged
    # (design cost, cost function or measured seconds): the campaign checks q and n_init on it
    budget = math.inf if cfg.budget is None else cfg.budget
    for name in ("q", "max_consecutive_failures"):
        value = getattr(cfg, name)
        if value < 1:
            raise ConfigError(f"{name} must be >= 1, got {value}")
    if cfg.budget is not None and cfg.budget < 1:
        raise ConfigError(f"budget must be >= 1, got {cfg.budget}")
    if cfg.budget is not None and cfg.budget > MAX_BUDGET:
        raise ConfigError(f"budget must be <= {MAX_BUDGET}, got {cfg.budget}")
    if cfg.q > budget:
        raise ConfigError(f"q={cfg.q} exceeds budget={budget}")
    if cfg.n_init is not None and not 1 <= cfg.n_init <= budget:
        raise ConfigError(f"n_init must be between 1 and budget={budget}, got {cfg.n_init}")
    if cfg.n_init is not None and cfg.initial_design.include_default and cfg.n_init + 1 > budget:
        raise ConfigError(
            f"n_init={cfg.n_init} + the default point (initial_design.include_default) exceeds "
            f"budget={cfg.budget}"
        )
    if not 0 <= cfg.seed <= MAX_SEED:
        raise ConfigError(f"seed must be an integer in [0, {MAX_SEED}], got {cfg.seed}")
    cores = os.cpu_count() or 1
    if cfg.threads is not None and not 1 <= cfg.threads <= MAX_THREADS_PER_CORE * cores:
        raise ConfigError(
            f"threads must be between 1 and {MAX_THREADS_PER_CORE * cores} (this machine has "
            f"{cores} cores), or null for torch's default; got {cfg.threads}"
        )
    if not 0 < cfg.lease < math.inf:
        raise ConfigError(f"lease must be a number of seconds > 0, got {cfg.lease}")
    if cfg.store is not None:
        from dsbo.storage import is_store_url

        if not isinstance(cfg.store, str) or not cfg.store.strip():
            raise ConfigError(
                f"store must be a SQLite path or a postgresql:// URL, got {cfg.store!r}"
            )
        if "://" in cfg.store and not is_store_url(cfg.store):
            raise ConfigError(
                f"store={cfg.store.split('://')[0]}://...: only postgresql:// URLs (or a SQLite "
                "file path) are stores"
            )
    if cfg.executor is not None:
        if cfg.executor.workers < 1:
            raise ConfigError(f"executor.workers must be >= 1, got {cfg.executor.workers}")
        if cfg.executor.address is not None and cfg.executor.kind != "dask":
            raise ConfigError(
                "executor.address is a Dask scheduler address: set executor.kind: dask"
            )
        if cfg.q != 1:
            raise ConfigError(
                f"executor runs trials one proposal at a time (each conditioned on the pending "
                f"ones); set q: 1, got q={cfg.q}"
            )
    if cfg.eval_timeout is not None and not 0 < cfg.eval_timeout < math.inf:
        raise ConfigError(f"eval_timeout must be a number of seconds > 0, got {cfg.eval_timeout}")
    for name in ("problem", "surrogate", "acquisition"):
        if not isinstance(getattr(cfg, name).options, dict):
            raise ConfigError(
                f"{name}.options must be a mapping, got {getattr(cfg, name).options!r}"
            )
    if cfg.surrogate.name not in SURROGATES:
        raise ConfigError(
            f"surrogate.name={cfg.surrogate.name!r} is not registered; choose one of: "
            + ", ".join(SURROGATES.names())
        )
    if cfg.acquisition.name != "auto" and cfg.acquisition.name not in POLICIES:
        raise ConfigError(
            f"acquisition.name={cfg.acquisition.name!r} is not registered; choose one of: auto, "
            + ", ".join(POLICIES.names())
        )
    if cfg.postprocess:
        if len(cfg.postprocess) != 1:
            raise ConfigError(
                f"postprocess takes one post-processor, e.g. {{bonsai: {{rho: 0.2}}}}; "
                f"got {sorted(cfg.postprocess)}"
            )
        [name] = cfg.postprocess
        if name not in POSTPROCESSORS:
            raise ConfigError(
                f"postprocess.name={name!r} is not registered; choose one of: "
                + ", ".join(POSTPROCESSORS.names())
            )
        if cfg.acquisition.name == "sobol":
            raise ConfigError(
                f"postprocess.{name} needs an optimized acquisition, not sobol; set "
                "postprocess: null (or --postprocess null) for a Sobol run"
            )


def check_early_stopping(cfg: OptimizeConfig) -> None:
    """Check ``early_stopping``, ``max_steps`` and ``budget_steps`` as the campaign will
    (:meth:`dsbo.campaign.early_stopping.EarlyStopping.build`, no torch), the messages naming
    the config's field (``early_stopping.reduction_factor``, not the rule's ``stopping.``)."""
    from dsbo.campaign.early_stopping import EarlyStopping
    from dsbo.campaign.freeze_thaw import FREEZE_THAW
    from dsbo.stopping import STOPPING_RULES

    for name in ("max_steps", "budget_steps"):
        value = getattr(cfg, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    if cfg.budget_steps is not None and cfg.budget_cost is not None:
        raise ConfigError("budget_steps and budget_cost are two budgets: give one of them")
    spec = cfg.early_stopping
    if isinstance(spec, str) and not spec.strip():
        rules = ", ".join(STOPPING_RULES.names())
        raise ConfigError(
            f"early_stopping is empty; give true (the recommended rule), a rule name ({rules}), "
            f"{FREEZE_THAW} or null"
        )
    try:
        EarlyStopping.build(spec, cfg.max_steps, cfg.budget_steps)
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("stopping."):
            message = "early_stopping." + message[len("stopping.") :]
        elif message.startswith("stopping "):
            message = "early_stopping " + message[len("stopping ") :]
        elif not message.startswith(("early_stopping", "max_steps", "budget_steps")):
            message = f"early_stopping: {message}"
        raise ConfigError(message) from None


def _field_types(cls: type, prefix: str = "") -> dict[str, Any]:
    """Dotted field name -> type hint, through nested config dataclasses."""
    out: dict[str, Any] = {}
    for name, hint in typing.get_type_hints(cls).items():
        if is_dataclass(hint):
            out[prefix + name] = hint
            out.update(_field_types(hint, f"{prefix}{name}."))
        else:
            out[prefix + name] = hint
    return out


def _check_literal(key: str, hint: Any, value: Any) -> None:
    """``value`` (as the strict YAML loader read it) fits the numeric or section field ``key``."""
    args = (
        typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        else (hint,)
    )
    optional = type(None) in args
    if value is None:
        if not optional:
            raise ConfigError(f"{key} is null; give it a value (or leave it out for the default)")
        return
    if int in args and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{key} must be a decimal integer, got {value!r}")
    if (
        float in args
        and int not in args
        and (isinstance(value, bool) or not isinstance(value, int | float))
    ):
        raise ConfigError(f"{key} must be a number, got {value!r}")
    if any(is_dataclass(a) for a in args) and not isinstance(value, dict):
        raise ConfigError(f"{key} must be a mapping, got {value!r}")


def _walk(mapping: Any, fields_: dict[str, Any], prefix: str = "") -> None:
    if not isinstance(mapping, dict):
        return
    for key, value in mapping.items():
        dotted = f"{prefix}{key}"
        if dotted in fields_:
            _check_literal(dotted, fields_[dotted], value)
            _walk(value, fields_, dotted + ".")


def check_literals(argv: Sequence[str]) -> None:
    """Check the numbers and sections of config files and ``--key value`` arguments before
    jsonargparse converts them, which would read ``0x10`` as 16 or ``010`` as 8.

    Every file given with ``--config`` and every value of a numeric field on the command line
    is read with :mod:`dsbo.cli.strict_yaml` (decimal integers only, no repeated keys).

    Raises:
        ConfigError: naming the field (or the file) at fault.
    """
    from dsbo.cli.strict_yaml import load, load_value

    fields_ = _field_types(OptimizeConfig)
    args = list(argv)
    for i, token in enumerate(args):
        if not token.startswith("--"):
            continue
        key, has_value, value = token[2:].partition("=")
        if not has_value:
            if i + 1 >= len(args):
                continue
            value = args[i + 1]
        if key == "config":
            path = Path(value)
            try:
                text = path.read_text()
            except OSError as exc:
                raise ConfigError(f"--config {value}: cannot read it ({exc.strerror})") from None
            try:
                _walk(load(text), fields_)
            except yaml.YAMLError as exc:
                detail = str(exc).strip().splitlines()
                raise ConfigError(f"--config {value}: {detail[0] if detail else exc}") from None
        elif key in fields_ and not is_dataclass(fields_[key]):
            hint = fields_[key]
            args_ = typing.get_args(hint) or (hint,)
            if int in args_ or float in args_:
                _check_literal(key, hint, load_value(value, key))
