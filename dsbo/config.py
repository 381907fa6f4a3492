"""The configuration of a BO campaign (``python -m dsbo.optimize``), as typed dataclasses.

jsonargparse turns these into the CLI: a YAML file (``--config configs/bo/default.yaml``) and
dotted overrides (``--surrogate.name gp --budget 50``), with type errors that name the key.
:func:`validate_config` then checks values and registry names, raising
:class:`~dsbo.errors.ConfigError` naming the field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from dsbo.acquisition.base import OptimizerSettings
from dsbo.errors import ConfigError


@dataclass
class ProblemConfig:
    """``name``: a registered problem (``python -m dsbo.optimize --list``); ``options``: its
    keyword options, e.g. ``{target: zero, noise_std: 0.1}``."""

    name: str = "branin-20d"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class SurrogateConfig:
    """``name``: a registered surrogate; ``options``: its keyword options."""

    name: str = "map-saas"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class AcquisitionConfig(OptimizerSettings):
    """``name``: a registered policy (``auto`` = qlognei, or qlognehvi for several objectives);
    ``options``: the policy's options; the inherited fields configure
    ``botorch.optim.optimize_acqf`` (see :class:`~dsbo.acquisition.base.OptimizerSettings`)."""

    name: str = "auto"
    options: dict[str, Any] = field(default_factory=dict)

    def optimizer_settings(self) -> OptimizerSettings:
        return OptimizerSettings(**{f.name: getattr(self, f.name) for f in fields(OptimizerSettings)})


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
class OptimizeConfig:
    """A BO campaign: which problem, surrogate and acquisition, how many evaluations, where.

    The built-in default (no arguments) optimizes Branin embedded in 20 dimensions with a
    MAP-SAAS ensemble and qLogNEI in 30 evaluations. ``postprocess`` names one post-processor
    of the acquisition's candidates and its options, e.g. ``{bonsai: {rho: 0.2}}``.
    """

    problem: ProblemConfig = field(default_factory=ProblemConfig)
    surrogate: SurrogateConfig = field(default_factory=SurrogateConfig)
    acquisition: AcquisitionConfig = field(default_factory=AcquisitionConfig)
    postprocess: dict[str, dict[str, Any] | None] | None = None
    budget: int = 30
    n_init: int | None = 10
    q: int = 1
    seed: int = 0
    run_dir: str | None = None
    threads: int | None = 1
    on_pending: Literal["retry", "abandon"] = "retry"
    max_consecutive_failures: int = 10
    progress: bool = True
    wandb: WandbConfig = field(default_factory=WandbConfig)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate_config(cfg: OptimizeConfig) -> None:
    """Check values jsonargparse's types cannot express; raise ConfigError naming the field."""
    from dsbo.acquisition import available_policies
    from dsbo.acquisition.base import POSTPROCESSORS
    from dsbo.surrogates import available_surrogates

    for name in ("budget", "q", "max_consecutive_failures"):
        value = getattr(cfg, name)
        if value < 1:
            raise ConfigError(f"{name} must be >= 1, got {value}")
    if cfg.n_init is not None and not 1 <= cfg.n_init <= cfg.budget:
        raise ConfigError(f"n_init must be between 1 and budget={cfg.budget}, got {cfg.n_init}")
    if cfg.seed < 0:
        raise ConfigError(f"seed must be >= 0, got {cfg.seed}")
    if cfg.threads is not None and cfg.threads < 1:
        raise ConfigError(f"threads must be >= 1 (or null for torch's default), got {cfg.threads}")
    if cfg.surrogate.name not in available_surrogates():
        raise ConfigError(
            f"surrogate.name={cfg.surrogate.name!r} is not registered; choose one of: "
            + ", ".join(available_surrogates())
        )
    if cfg.acquisition.name != "auto" and cfg.acquisition.name not in available_policies():
        raise ConfigError(
            f"acquisition.name={cfg.acquisition.name!r} is not registered; choose one of: auto, "
            + ", ".join(available_policies())
        )
    if cfg.postprocess:
        if len(cfg.postprocess) != 1:
            raise ConfigError(
                f"postprocess takes one post-processor, e.g. {{bonsai: {{rho: 0.2}}}}; "
                f"got {sorted(cfg.postprocess)}"
            )
        [name] = cfg.postprocess
        POSTPROCESSORS.get(name)
        if cfg.acquisition.name == "sobol":
            raise ConfigError(f"postprocess.{name} needs an optimized acquisition, not sobol")
