"""How acquisition functions are maximized: :class:`OptimizerSettings`, a plain dataclass.

It imports no torch or BoTorch at module level (:meth:`OptimizerSettings.maximize` imports them
when it runs), so configuration code, e.g. the command line's config that subclasses it,
starts without torch.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

from dsbo.errors import ConfigError

#: ``torch.Tensor``. Not imported, not even for type checkers: jsonargparse runs a module's
#: ``TYPE_CHECKING`` imports when it reads a dataclass, and the command-line config must parse
#: without torch.
Tensor = Any

#: Raw points scored per call of the acquisition when picking the starts.
RAW_BATCH = 512


@dataclass
class OptimizerSettings:
    """How acquisition functions are maximized (``botorch.optim.optimize_acqf``).

    The default is BoTorch's: L-BFGS-B from ``num_restarts`` starts picked among
    ``raw_samples`` scored quasi-random points. ``method: sgd`` (or ``adam``) runs a
    ``torch.optim`` optimizer for exactly ``maxiter`` steps at learning rate ``lr`` instead
    (BoTorch's ``gen_candidates_torch``), and ``initial: uniform`` starts from
    ``num_restarts`` uniform random points. The neural-greedy thesis' acquisition optimizer
    (Paria, section 3.7.1: 10 uniform starts x 500 gradient-descent steps at lr 0.01) is
    :meth:`thesis`.

    Args:
        num_restarts: Optimization restarts (starting points).
        raw_samples: Quasi-random points scored to pick the restarts (``initial: raw_samples``).
        maxiter: Iterations per L-BFGS-B run, or the number of steps of ``sgd`` / ``adam``.
        batch_limit: Restarts optimized jointly in one batch (BoTorch's batched L-BFGS-B keeps
            each restart its own problem: a larger batch gives the same optima, faster).
        sequential: For ``q > 1``, optimize the candidates one at a time (greedy).
        mc_samples: Quasi-MC samples for MC acquisition functions.
        fixed_features: Held fixed during optimization: ``{parameter name: value}`` in user
            values (a campaign turns them into columns; a categorical fixes its one-hot
            columns) or ``{column index: value}``.
        method: ``lbfgsb`` (default), ``sgd`` (plain gradient ascent) or ``adam``.
        lr: Learning rate of ``sgd`` / ``adam``.
        initial: ``raw_samples`` (BoTorch's scored starts) or ``uniform`` random starts.
        categorical: How unordered categorical parameters (one-hot columns) are optimized:
            ``enumerate`` (the default: BoTorch's ``optimize_acqf_mixed``, one continuous
            optimization per combination of categories, the best kept; with more than
            ``max_enumerate`` combinations, or with ``method`` ``sgd``/``adam``, the columns
            are relaxed instead) or ``relax`` (the columns optimized as continuous values in
            ``[0, 1]``, the maximizer projected to its largest column). Neither applies where
            categories are all that is free (a space of only categoricals, or every other column
            fixed or inactive): the configurations are then enumerated or searched locally
            (:mod:`dsbo.acquisition.discrete_search`), whatever this says. Chosen by measurement
            (``experiments/bench_categorical.py``): enumeration reached a lower regret in 4 of
            6 paired runs, every run of the Branin problem, at 5-9x the proposal time.
        max_enumerate: Largest number of category combinations ``enumerate`` optimizes. Where
            only categories are free, up to ``max(max_enumerate, raw_samples)`` configurations
            are scored one by one, above that a local search over one-category moves runs.
        min_distance: A proposal closer than this to an evaluated or pending point (max-norm
            over the unit cube's coordinates, after rounding to the search space) is passed
            over for the next best local optimum of the acquisition, or for the best point of
            a Sobol set outside those balls. The default ``0.01`` keeps a search from
            polishing a digit that the objective does not resolve (on ``experiments/
            mixed_spaces.py``'s mixed Branin, half the proposals of a run were such repeats
            without it); ``0`` refuses only exact repeats. A pruned proposal (BONSAI) is
            replaced only when it repeats a point exactly: its dense maximizer keeps the rule.
        stall_patience: After this many proposals in a row (past the initial design) that do
            not improve the best value, and every as many proposals again, a single-objective
            search proposes the maximizer of a posterior draw (Thompson sampling) instead of
            the acquisition's (:mod:`dsbo.acquisition.exploration`); ``0`` never does.
        branches: ``thompson`` (default): the initial design balances each categorical's
            values, and a stalled search's exploration first draws among the combinations of
            categories (branches), proposing the incumbent moved into another branch with its
            own conditional parameters varied when the posterior draw prefers one
            (:mod:`dsbo.acquisition.branches`); ``acquisition``: a raw Sobol design and the
            stall rule's full-space draw only (the rule before issue 58).
    """

    METHODS = ("lbfgsb", "sgd", "adam")
    BRANCHES = ("thompson", "acquisition")
    INITIAL = ("raw_samples", "uniform")
    CATEGORICAL = ("relax", "enumerate")

    num_restarts: int = 10
    raw_samples: int = 512
    maxiter: int = 200
    batch_limit: int = 10
    sequential: bool = False
    mc_samples: int = 128
    fixed_features: dict[int | str, Any] | None = None
    method: str = "lbfgsb"
    lr: float = 0.01
    initial: str = "raw_samples"
    categorical: str = "enumerate"
    max_enumerate: int = 16
    min_distance: float = 0.01
    stall_patience: int = 3
    branches: str = "thompson"

    @classmethod
    def thesis(cls, **overrides: Any) -> OptimizerSettings:
        """Paria's neural-greedy optimizer: 10 uniform random starts x 500 gradient steps, lr 0.01."""
        return cls(
            **{
                "num_restarts": 10,
                "maxiter": 500,
                "method": "sgd",
                "lr": 0.01,
                "initial": "uniform",
                "batch_limit": 10,
                **overrides,
            }
        )

    def maximize(
        self, acqf: Any, bounds: Tensor, q: int, seed: int, **kwargs: Any
    ) -> tuple[Tensor, Tensor]:
        """``optimize_acqf`` with these settings over ``bounds``; returns ``(X, values)``.

        ``kwargs`` go to ``optimize_acqf`` (e.g. ``return_best_only``); with
        ``initial: uniform`` the starts are ``num_restarts`` uniform points drawn with ``seed``.
        When the fixed features (with each of ``fixed_features_list``'s combinations) fix every
        column, the fixed points are scored instead
        (:func:`~dsbo.acquisition.discrete_search.score_table`).
        """
        import torch
        from botorch.generation.gen import gen_candidates_torch
        from botorch.optim import optimize_acqf

        combinations = kwargs.get("fixed_features_list") or [{}]
        fixed = {int(j): float(v) for j, v in (self.fixed_features or {}).items()}
        if all(
            set(fixed) | {int(j) for j in c} >= set(range(bounds.shape[-1])) for c in combinations
        ):
            # every column fixed: nothing for an optimizer to move (BoTorch's L-BFGS-B fails
            # on an empty problem), the candidates are the fixed points themselves
            from dsbo.acquisition.discrete_search import score_table

            rows = [
                [{**c, **fixed}.get(j, 0.0) for j in range(bounds.shape[-1])] for c in combinations
            ]
            return score_table(acqf, bounds, q, torch.tensor(rows, dtype=bounds.dtype))
        # the raw points are scored RAW_BATCH at a time: BoTorch's default (batch_limit at a
        # time) made scoring 512 raw points 6x slower on a MAP-SAAS qLogNEI, same starts
        options: dict[str, Any] = {
            "batch_limit": self.batch_limit,
            "init_batch_limit": max(self.batch_limit, RAW_BATCH),
            "seed": seed,
        }
        fixed_features = self.fixed_features
        if self.method == "lbfgsb":
            options["maxiter"] = self.maxiter
        else:
            # gen_candidates_torch does not drop fixed columns from the bounds: pin them there
            if fixed_features:
                bounds = bounds.clone()
                for j, value in fixed_features.items():
                    bounds[:, int(j)] = float(value)
                fixed_features = None
            optimizer = torch.optim.SGD if self.method == "sgd" else torch.optim.Adam
            kwargs["gen_candidates"] = functools.partial(gen_candidates_torch, optimizer=optimizer)
            # exactly maxiter steps: the relative-improvement stop never fires
            options["optimizer_options"] = {"lr": self.lr}
            options["stopping_criterion_options"] = {"maxiter": self.maxiter, "rel_tol": -math.inf}
        if self.initial == "uniform" and "batch_initial_conditions" not in kwargs:
            generator = torch.Generator().manual_seed(seed)
            lower, upper = bounds[0], bounds[1]
            u = torch.rand(
                self.num_restarts, q, bounds.shape[-1], generator=generator, dtype=bounds.dtype
            )
            kwargs["batch_initial_conditions"] = self.apply_fixed_features(
                lower + (upper - lower) * u
            )
        if "batch_initial_conditions" not in kwargs:
            kwargs.setdefault("raw_samples", self.raw_samples)
        combinations = kwargs.pop("fixed_features_list", None)
        if combinations:
            from botorch.optim import optimize_acqf_mixed

            kwargs.pop("sequential", None)  # optimize_acqf_mixed builds a batch greedily
            return optimize_acqf_mixed(
                acqf,
                bounds=bounds,
                q=q,
                num_restarts=kwargs.pop("num_restarts", self.num_restarts),
                fixed_features_list=[{**combo, **(fixed_features or {})} for combo in combinations],
                options=options,
                **kwargs,
            )
        return optimize_acqf(
            acqf,
            bounds=bounds,
            q=q,
            num_restarts=kwargs.pop("num_restarts", self.num_restarts),
            options=options,
            fixed_features=fixed_features,
            **kwargs,
        )

    def apply_fixed_features(self, X: Tensor) -> Tensor:
        """``X`` with the fixed features set (a copy; ``X`` itself is not changed)."""
        if not self.fixed_features:
            return X
        X = X.clone()
        for j, value in self.fixed_features.items():
            X[..., int(j)] = float(value)
        return X

    def for_dry_run(self) -> OptimizerSettings:
        """Cheap settings for a campaign's dry iteration (:mod:`dsbo.campaign.validation`): one restart,
        three iterations, 16 MC samples; ``raw_samples`` and fixed features unchanged."""
        return dataclasses.replace(
            self,
            num_restarts=1,
            maxiter=min(self.maxiter, 3),
            batch_limit=1,
            mc_samples=min(self.mc_samples, 16),
        )

    def validate(self, prefix: str = "acquisition") -> None:
        for name in ("num_restarts", "raw_samples", "maxiter", "batch_limit", "mc_samples"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{prefix}.{name} must be a positive integer, got {value!r}")
        if self.method not in self.METHODS:
            raise ConfigError(
                f"{prefix}.method={self.method!r}: choose one of {', '.join(self.METHODS)}"
            )
        if self.categorical not in self.CATEGORICAL:
            raise ConfigError(
                f"{prefix}.categorical={self.categorical!r}: choose one of {', '.join(self.CATEGORICAL)}"
            )
        max_enumerate = self.max_enumerate
        if (
            not isinstance(max_enumerate, int)
            or isinstance(max_enumerate, bool)
            or max_enumerate < 1
        ):
            raise ConfigError(
                f"{prefix}.max_enumerate must be a positive integer, got {max_enumerate!r}"
            )
        distance = self.min_distance
        if (
            isinstance(distance, bool)
            or not isinstance(distance, int | float)
            or not 0 <= distance < 0.5
        ):
            raise ConfigError(
                f"{prefix}.min_distance must be a number in [0, 0.5), got {distance!r}"
            )
        patience = self.stall_patience
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ConfigError(f"{prefix}.stall_patience must be an integer >= 0, got {patience!r}")
        if self.branches not in self.BRANCHES:
            raise ConfigError(
                f"{prefix}.branches={self.branches!r}: choose one of {', '.join(self.BRANCHES)}"
            )
        if self.initial not in self.INITIAL:
            raise ConfigError(
                f"{prefix}.initial={self.initial!r}: choose one of {', '.join(self.INITIAL)}"
            )
        lr = self.lr
        if (
            isinstance(lr, bool)
            or not isinstance(lr, int | float)
            or not (math.isfinite(lr) and lr > 0)
        ):
            raise ConfigError(f"{prefix}.lr must be a finite number > 0, got {lr!r}")


__all__ = ["OptimizerSettings"]
