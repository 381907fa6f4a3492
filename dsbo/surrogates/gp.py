"""Gaussian-process baselines, registered by name for :func:`dsbo.surrogates.fit_surrogate`.

Every factory receives ``n x d`` raw inputs, ``n x 1`` outcomes and the input normalization
(to the unit cube) and output standardization built once by ``fit_surrogate``; it returns a
fitted, single-output BoTorch model whose posterior is in raw coordinates.

=============  ======================================================================  =====
name           model                                                                   fit
=============  ======================================================================  =====
``gp``         ``SingleTaskGP``, Matern-5/2 or RBF ARD kernel                          MAP
``map-saas``   ``EnsembleMapSaasSingleTaskGP`` (BONSAI's ensemble MAP-SAAS GP)         MAP
``saasbo``     ``SaasFullyBayesianSingleTaskGP`` (SAASBO, needs ``dsbo[saas]``)        NUTS
``ibnn``       ``SingleTaskGP`` with the infinite-width BNN kernel                     MAP
=============  ======================================================================  =====

References:
    D. Eriksson and M. Jankowiak. High-dimensional Bayesian optimization with sparse
    axis-aligned subspaces. UAI 2021 (SAASBO).
    C. Hvarfner, E. O. Hellsten and L. Nardi. Vanilla Bayesian optimization performs great in
    high dimensions. ICML 2024 (the dimension-scaled lengthscale prior).
    Y. L. Li, T. G. J. Rudner and A. G. Wilson. A study of Bayesian neural network surrogates
    for Bayesian optimization. ICLR 2024 (the infinite-width BNN kernel GP baseline).
    S. Daulton, D. Eriksson, M. Balandat and E. Bakshy. BONSAI: Bayesian optimization with
    natural simplicity and interpretability. 2026 (ensemble MAP-SAAS, its Algorithm 2).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.kernels.infinite_width_bnn import InfiniteWidthBNNKernel
from botorch.models.map_saas import EnsembleMapSaasSingleTaskGP
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform, Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.constraints import Interval
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor
from torch.distributions import HalfCauchy

from dsbo.errors import ConfigError
from dsbo.surrogates.mixed_kernel import mixed_covar_module
from dsbo.surrogates.registry import register_surrogate
from dsbo.surrogates.warm_start import (
    FitState,
    digest,
    load_parameters,
    parameters_of,
    restart_reason,
)

#: Kernels the ``gp`` surrogate accepts for its ``kernel`` option.
GP_KERNELS = ("matern52", "rbf")
#: How the exact GP models unordered categoricals (:func:`fit_gp`).
GP_CATEGORICAL = ("mixed", "ard")

#: Scale of the HalfCauchy prior the ensemble MAP-SAAS taus are drawn from (BONSAI, Alg. 2).
SAAS_TAU_SCALE = 0.1

#: Warm-start schedule of ``gp`` with ``warm_start: true`` (:func:`fit_gp`, measured in
#: ``experiments/bench_map_saas_fit.py``): a full fit every this many fits ...
RESTART_EVERY = 5
#: ... and of ``map-saas`` (:func:`fit_map_saas`; ``experiments/default_command.py``): full and
#: warm fits alternate ...
MAP_SAAS_RESTART_EVERY = 2
#: ... or when more points than this were added since the previous fit ...
RESTART_AFTER_POINTS = 3
#: ... or when a warm fit's per-point log posterior fell by more than this for a member.
RESTART_DROP = 0.5

#: Initial I-BNN weight and bias variances (see :func:`fit_ibnn`).
IBNN_INIT_WEIGHT_VAR = 10.0
IBNN_INIT_BIAS_VAR = 5.0
#: Upper bound on the I-BNN weight and bias variances (see :func:`fit_ibnn`).
IBNN_MAX_VAR = 100.0

SAAS_INSTALL_HINT = (
    'install the optional extra with `pip install "dsbo[saas]"` '
    '(equivalently `pip install "botorch[fully-bayesian]>=0.18.1,<0.19"`, '
    "which brings JAX, jaxlib and NumPyro)"
)


def _check_int(name: str, field: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int ``>= minimum`` or raise a ConfigError naming the option."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"surrogate {name!r}: option {field}={value!r} must be an integer >= {minimum}"
        )
    return value


def _ensemble_outcome_transform(
    outcome_transform: OutcomeTransform | None, batch_shape: torch.Size
) -> OutcomeTransform | None:
    """The same standardization, re-declared for targets with a leading ensemble batch.

    ``EnsembleMapSaasSingleTaskGP`` repeats ``train_Y`` once per ensemble member before the
    outcome transform sees it, and ``Standardize`` checks the batch shape of its targets. Each
    member sees identical targets, so the per-member statistics equal the unbatched ones.
    """
    if isinstance(outcome_transform, Standardize) and outcome_transform._batch_shape != batch_shape:
        return Standardize(
            m=outcome_transform._m,
            outputs=outcome_transform._outputs,
            batch_shape=batch_shape,
            min_stdv=outcome_transform._min_stdv,
        )
    return outcome_transform


def _fit_exact_mll(model: Model) -> Model:
    """Fit the hyperparameters by maximizing the (prior-regularized) marginal likelihood."""
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll)
    model.eval()
    return model


@register_surrogate("gp", "SingleTaskGP, Matern-5/2 (default) or RBF ARD kernel, MAP fit")
def fit_gp(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    kernel: str = "matern52",
    warm_start: bool | None = None,
    restart_every: int = RESTART_EVERY,
    restart_after_points: int = RESTART_AFTER_POINTS,
    previous_fit: FitState | dict | None = None,
    categorical: str = "ard",
    categorical_groups: Sequence[Sequence[int]] | None = None,
) -> SingleTaskGP:
    """An exact GP with an ARD kernel, fitted by maximizing the marginal likelihood.

    Both kernels carry BoTorch's default (0.18) lengthscale prior, the dimension-scaled
    ``LogNormal(sqrt(2) + log(d) / 2, sqrt(3))`` of Hvarfner et al. (2024), with lengthscales
    constrained to be ``>= 0.025``, and no outputscale (the outputs are standardized). The
    noise is inferred under BoTorch's default ``LogNormal(-4, 1)`` prior, or fixed to
    ``train_Yvar`` when that is given.

    With ``warm_start``, a campaign's fit starts from the hyperparameters of its previous
    fit (``previous_fit``; :mod:`dsbo.surrogates.warm_start`) instead of BoTorch's
    initialization, except every ``restart_every`` fits and when more than
    ``restart_after_points`` points were added. By default (``None``) on with the mixed
    kernel and off otherwise: the plain GP's fit is cheap and a warm start saved little of it
    (``experiments/bench_map_saas_fit.py``), while the mixed kernel's fit from BoTorch's
    initialization took 380-580 L-BFGS iterations on 30 points and a warm one 6-28.

    Args:
        kernel: ``"matern52"`` (Matern-5/2, ARD) or ``"rbf"`` (squared exponential, ARD).
        warm_start: Start from ``previous_fit`` when given (``None``: with the mixed kernel).
        restart_every: A fit from BoTorch's initialization every this many fits.
        restart_after_points: A fit from BoTorch's initialization when more points than this
            were added.
        previous_fit: The ``fit_state`` of the previous fit (dsbo's campaign passes it).
        categorical: How unordered categoricals (``categorical_groups``, their one-hot
            columns, passed by the campaign) are modelled: ``"ard"`` (the default: the
            one-hot columns as inputs of the ARD kernel, like any other) or ``"mixed"`` (the
            kernel of BoTorch's ``MixedSingleTaskGP``, a categorical kernel in a sum and a
            product with the continuous one; :mod:`dsbo.surrogates.mixed_kernel`). Measured
            on ``experiments/mixed_spaces.py`` (seed 0 only): mixed reached the optimum of the
            mixed Branin (0.706 vs 0.93) but was worse on the Ackley (4.30 vs 3.17), at about
            five times the proposal time, so it is not the default.
        categorical_groups: The one-hot columns of each unordered categorical.

    Example:
        >>> model = fit_surrogate({"name": "gp", "kernel": "rbf"}, X, Y, bounds=bounds)
    """
    if kernel not in GP_KERNELS:
        raise ConfigError(
            f"surrogate 'gp': option kernel={kernel!r} is unknown; choose one of {list(GP_KERNELS)}"
        )
    if warm_start is not None and not isinstance(warm_start, bool):
        raise ConfigError(f"surrogate 'gp': option warm_start={warm_start!r} must be true or false")
    restart_every = _check_int("gp", "restart_every", restart_every, 1)
    restart_after_points = _check_int("gp", "restart_after_points", restart_after_points, 0)
    if categorical not in GP_CATEGORICAL:
        raise ConfigError(
            f"surrogate 'gp': option categorical={categorical!r} is unknown; choose one of {list(GP_CATEGORICAL)}"
        )
    mixed = categorical == "mixed" and bool(categorical_groups)
    if warm_start is None:
        warm_start = mixed
    if mixed:
        covar_module = mixed_covar_module(
            train_X.shape[-1], categorical_groups, use_rbf_kernel=kernel == "rbf"
        )
    else:
        covar_module = get_covar_module_with_dim_scaled_prior(
            ard_num_dims=train_X.shape[-1], use_rbf_kernel=kernel == "rbf"
        )
    model = SingleTaskGP(
        train_X,
        train_Y,
        train_Yvar=train_Yvar,
        covar_module=covar_module,
        input_transform=input_transform,
        outcome_transform=outcome_transform,
    )
    previous = FitState.from_json(previous_fit, "gp") if warm_start else None
    reason = (
        restart_reason(previous, train_X, restart_every, restart_after_points)
        if warm_start
        else "warm start off"
    )
    if reason is None and not load_parameters(model, previous.parameters):
        reason = "the previous fit does not fit this model"
    model = _fit_exact_mll(model)
    model.fit_state = FitState(
        surrogate="gp",
        parameters=parameters_of(model),
        num_points=train_X.shape[0],
        x_digest=digest(train_X),
        log_posterior=[],  # no restart on a drop: the plain GP's full fit has one start too
        fits_since_restart=0 if reason is not None else previous.fits_since_restart + 1,
        start=reason or "warm",
    )
    return model


def draw_saas_taus(num_taus: int, generator: torch.Generator | None = None) -> Tensor:
    """Draw ``num_taus`` global shrinkage scales iid from ``HalfCauchy(0.1)`` (float64).

    Uses ``generator``, or torch's global RNG when it is ``None`` (so that
    ``torch.manual_seed`` fixes the draw).
    """
    u = torch.rand(num_taus, generator=generator, dtype=torch.double)
    # Keep u off 0 so that no tau is exactly zero (a degenerate SAAS prior).
    u = u.clamp(min=torch.finfo(torch.double).eps)
    return HalfCauchy(torch.tensor(SAAS_TAU_SCALE, dtype=torch.double)).icdf(u)


@register_surrogate(
    "map-saas", "Ensemble MAP-SAAS GP (BONSAI): num_taus SAAS GPs, taus ~ HalfCauchy(0.1)"
)
def fit_map_saas(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    num_taus: int = 4,
    fit_restarts: int = 4,
    seed: int | None = None,
    warm_start: bool = True,
    restart_every: int = MAP_SAAS_RESTART_EVERY,
    restart_after_points: int = RESTART_AFTER_POINTS,
    restart_drop: float = RESTART_DROP,
    previous_fit: FitState | dict | None = None,
) -> EnsembleMapSaasSingleTaskGP:
    """BoTorch's ``EnsembleMapSaasSingleTaskGP``: a uniform mixture of ``num_taus`` MAP-fitted
    Matern-5/2 GPs, member ``m`` with the SAAS prior ``l_j^-2 ~ HalfCauchy(tau_m)`` and
    ``tau_m ~ HalfCauchy(0.1)`` iid (BONSAI, Algorithm 2).

    The taus are drawn here, not inside BoTorch: from torch's global RNG when ``seed`` is
    ``None`` (so ``torch.manual_seed(s)`` before the call gives the same model), else from a
    private RNG seeded with ``seed``, which also isolates the fit from (and leaves untouched)
    the global RNG. A warm fit keeps the taus of the fit it starts from; a full fit draws them afresh.

    **Full fit (restarts).** The MAP objective is multimodal when ``n`` is small against
    ``d``: a fit from BoTorch's initialization (every lengthscale 1) can end in a mode that
    explains the data with irrelevant inputs and switches the relevant ones off (lengthscale
    ~1e4). On Branin embedded in 50-D with 30 random points that happened for 2 of 8 data
    sets, at a per-point log posterior of -1.7 against -0.3 to -0.4 for the mode that finds
    the two relevant inputs; four restarts found the better mode on 8 of 8. So the model is
    fitted from the default start plus ``fit_restarts`` starts with log-uniform lengthscales
    in ``[1, e^3]``, then once more with every member started from the lengthscales of the
    best member so far (the members differ only in tau, so a mode one member found is a
    good start for the others), and **each member** keeps the parameters of its best start
    (the members are independent given their tau, so the selection is exact per member;
    :func:`map_saas_member_objective`). The default and random starts are fitted in one
    batched model of ``M (fit_restarts + 1)`` members (the taus repeated): its marginal
    log-likelihood is the sum of the members' independent objectives, so one L-BFGS run
    fits all starts at once, for about half the time of fitting them one after another.

    **Warm starts** (:mod:`dsbo.surrogates.warm_start`). In a campaign, where the data grow
    by a point per fit, each member instead starts from its optimum of the previous fit
    (``previous_fit``, which the campaign keeps) and is fitted once. The full fit runs
    instead every ``restart_every`` fits, when more than ``restart_after_points`` points
    were added or the previous points are not the first rows of ``train_X``, and after a
    warm fit whose per-point log posterior fell by more than ``restart_drop`` below the
    previous fit's for any member. A full fit draws new taus, as a fit without warm starts
    does at every step: with the taus kept for the whole run, the default run (Branin-20d,
    30 evaluations) kept an ensemble that took a wrong input for a relevant one and ended at
    -1.77 against -0.41 without warm starts. Full and warm fits alternate (``restart_every=2``):
    with a full fit every 5 fits, a warm fit kept such a mode for up to 4 fits, and the default
    run's best point changed an input Branin ignores on 6 of seeds 0-7 (one run, seed 6, never
    left the initial design's best, -8.43; mean best -1.43); every other fit full, on 1 of 8,
    no run stuck (mean best -0.449, worst -0.511), for 1.7x the fitting time per iteration
    (``experiments/default_command.py``). The returned model carries the state for the
    next fit as ``model.fit_state``.

    Args:
        num_taus: Ensemble size ``M`` (4 in the paper).
        fit_restarts: Random restarts of a full fit besides the default start (0: one fit).
        seed: Optional seed for the taus and for any random restart of the fit.
        warm_start: Start from ``previous_fit`` when given (``False``: every fit is full).
        restart_every: A full fit every this many fits (1: every fit is full).
        restart_after_points: A full fit when more points than this were added.
        restart_drop: A full fit after a warm fit whose per-point log posterior fell by
            more than this, for any member, below the previous fit's.
        previous_fit: The ``fit_state`` of the previous fit (dsbo's campaign passes it).
    """
    num_taus = _check_int("map-saas", "num_taus", num_taus, 1)
    fit_restarts = _check_int("map-saas", "fit_restarts", fit_restarts, 0)
    restart_every = _check_int("map-saas", "restart_every", restart_every, 1)
    restart_after_points = _check_int("map-saas", "restart_after_points", restart_after_points, 0)
    if not isinstance(warm_start, bool):
        raise ConfigError(
            f"surrogate 'map-saas': option warm_start={warm_start!r} must be true or false"
        )
    if (
        isinstance(restart_drop, bool)
        or not isinstance(restart_drop, int | float)
        or not restart_drop >= 0
    ):
        raise ConfigError(
            f"surrogate 'map-saas': option restart_drop={restart_drop!r} must be a number >= 0"
        )
    if seed is not None:
        _check_int("map-saas", "seed", seed, 0)
    previous = FitState.from_json(previous_fit, "map-saas") if warm_start else None
    if previous is not None and len(previous.extra.get("taus", ())) != num_taus:
        previous = None
    rng = torch.random.fork_rng(devices=[]) if seed is not None else contextlib.nullcontext()
    with rng:
        if seed is not None:
            torch.manual_seed(seed)
        fresh_taus = draw_saas_taus(num_taus).to(train_X)

        def build(starts: int = 1, taus: Tensor = fresh_taus) -> EnsembleMapSaasSingleTaskGP:
            """A model of ``starts`` copies of the ensemble (member ``r M + m`` has tau_m)."""
            size = num_taus * starts
            return EnsembleMapSaasSingleTaskGP(
                train_X,
                train_Y,
                train_Yvar=train_Yvar,
                num_taus=size,
                taus=taus.repeat(starts),
                input_transform=copy.deepcopy(input_transform),
                outcome_transform=_ensemble_outcome_transform(
                    copy.deepcopy(outcome_transform), torch.Size([size])
                ),
            )

        n = train_X.shape[0]
        reason = (
            "warm start off"
            if not warm_start
            else restart_reason(previous, train_X, restart_every, restart_after_points)
        )
        if reason is None:
            taus = torch.tensor(previous.extra["taus"]).to(train_X)
            warm = build(taus=taus)
            if load_parameters(warm, previous.parameters):
                warm = _fit_exact_mll(warm)
                objective = map_saas_member_objective(warm) / n
                drop = float((torch.tensor(previous.log_posterior).to(objective) - objective).max())
                if drop <= restart_drop:
                    return _with_fit_state(
                        warm, train_X, taus, previous.fits_since_restart + 1, "warm", objective
                    )
                reason = f"log posterior per point fell by {drop:.3g} (more than {restart_drop:g})"
            else:
                reason = "the previous fit does not fit this model"
        model = _full_map_saas_fit(build, num_taus, fit_restarts)
        return _with_fit_state(model, train_X, fresh_taus, 0, reason)


def _full_map_saas_fit(
    build: Callable[..., EnsembleMapSaasSingleTaskGP], num_taus: int, fit_restarts: int
):
    """The full MAP-SAAS fit of :func:`fit_map_saas`: the default start and ``fit_restarts``
    random starts batched in one model, each member keeping its best, then every member from
    the best member's lengthscales."""
    if fit_restarts == 0:
        return _fit_exact_mll(build())
    starts = build(fit_restarts + 1)
    kernel = _lengthscale_kernel(starts)
    lengthscale = kernel.lengthscale.detach().clone()
    lengthscale[num_taus:] = torch.exp(3.0 * torch.rand_like(lengthscale[num_taus:]))
    kernel.lengthscale = lengthscale
    starts = _fit_exact_mll(starts)
    objective = map_saas_member_objective(starts).reshape(fit_restarts + 1, num_taus)
    best, start = objective.max(dim=0)
    model = build()
    members = torch.arange(num_taus)
    _copy_members(model, starts, members, start * num_taus + members)
    if num_taus > 1:  # every member from the best member's lengthscales (they differ in tau only)
        candidate = build()
        _lengthscale_kernel(candidate).lengthscale = best_member_lengthscales(model, best)
        candidate = _fit_exact_mll(candidate)
        better = map_saas_member_objective(candidate) > best
        _copy_members(model, candidate, members[better], members[better])
    return model


def _with_fit_state(
    model: EnsembleMapSaasSingleTaskGP,
    train_X: Tensor,
    taus: Tensor,
    fits_since_restart: int,
    start: str,
    log_posterior: Tensor | None = None,
) -> EnsembleMapSaasSingleTaskGP:
    """Attach the :class:`FitState` the next fit of a campaign starts from (``log_posterior``:
    the per-member log posterior per point, when the caller has it already)."""
    n = train_X.shape[0]
    if log_posterior is None:
        log_posterior = map_saas_member_objective(model) / n
    model.fit_state = FitState(
        surrogate="map-saas",
        parameters=parameters_of(model),
        num_points=n,
        x_digest=digest(train_X),
        log_posterior=log_posterior.tolist(),
        fits_since_restart=fits_since_restart,
        extra={"taus": taus.tolist()},
        start=start,
    )
    return model


def _lengthscale_kernel(model: EnsembleMapSaasSingleTaskGP) -> torch.nn.Module:
    """The kernel that carries the ARD lengthscales (inside BoTorch's ScaleKernel)."""
    covar = model.covar_module
    return covar if getattr(covar, "lengthscale", None) is not None else covar.base_kernel


def best_member_lengthscales(model: EnsembleMapSaasSingleTaskGP, objective: Tensor) -> Tensor:
    """The lengthscales of the member with the highest ``objective``, for every member
    (clamped inside the SAAS kernel's constraint): the start of the fit's last restart."""
    fitted = _lengthscale_kernel(model).lengthscale.detach()
    return fitted[int(torch.argmax(objective))].expand_as(fitted).clamp(0.011, 9999.0)


def map_saas_member_objective(model: EnsembleMapSaasSingleTaskGP) -> Tensor:
    """Per-member log posterior of a MAP-SAAS ensemble, ``M`` values: the exact marginal
    log-likelihood of each member plus the log densities of *its own* hyperparameter
    priors (gpytorch's ``ExactMarginalLogLikelihood`` adds the priors of all members to
    every member, which is why this is computed here). Higher is better."""
    num_members = model.batch_shape[0]
    was_training = model.training
    model.train()
    try:
        with torch.no_grad():
            output = model.likelihood(model(*model.train_inputs))
            value = output.log_prob(model.train_targets)
            for _, module, prior, closure, _ in model.named_priors():
                log_prob = prior.log_prob(closure(module))
                if log_prob.dim() and log_prob.shape[0] == num_members:
                    value = value + log_prob.reshape(num_members, -1).sum(-1)
                else:  # a prior shared by all members: the same constant for each
                    value = value + log_prob.sum()
    finally:
        model.train(was_training)
    return value.detach()


def _copy_members(model: Model, source: Model, rows: Tensor, source_rows: Tensor) -> None:
    """Copy the fitted parameters of ensemble members ``source_rows`` of ``source`` into
    members ``rows`` of ``model`` (parameters whose first dimension is the ensemble batch)."""
    source_parameters = dict(source.named_parameters())
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() and parameter.shape[0] == model.batch_shape[0]:
                parameter[rows] = source_parameters[name][source_rows]
    model.eval()
    model.prediction_strategy = None


def _require_jax() -> None:
    """Raise a ConfigError that says how to install JAX/NumPyro if they are missing."""
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except (ImportError, AttributeError) as err:
        raise ConfigError(
            "surrogate 'saasbo' (fully Bayesian SAAS GP fitted by NUTS) needs JAX and NumPyro, "
            f"which are not importable ({err}); {SAAS_INSTALL_HINT}"
        ) from err


@register_surrogate("saasbo", "Fully Bayesian SAAS GP (SAASBO), NUTS on NumPyro; needs dsbo[saas]")
def fit_saasbo(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    warmup_steps: int = 256,
    num_samples: int = 128,
    thinning: int = 16,
    max_tree_depth: int = 6,
    seed: int = 0,
) -> Model:
    """BoTorch's ``SaasFullyBayesianSingleTaskGP`` with hyperparameters sampled by NUTS.

    The posterior is a uniform mixture over the ``num_samples // thinning`` retained MCMC
    samples. NUTS runs in NumPyro on JAX (the ``dsbo[saas]`` extra) in 64-bit precision,
    seeded with ``seed`` (JAX's PRNG, independent of torch's).

    Args:
        warmup_steps: NUTS burn-in steps.
        num_samples: NUTS samples drawn after warm-up.
        thinning: Keep every ``thinning``-th sample.
        max_tree_depth: Maximum NUTS tree depth.
        seed: Seed of the JAX PRNG key.
    """
    _check_int("saasbo", "warmup_steps", warmup_steps, 1)
    _check_int("saasbo", "num_samples", num_samples, 1)
    _check_int("saasbo", "thinning", thinning, 1)
    _check_int("saasbo", "max_tree_depth", max_tree_depth, 1)
    _check_int("saasbo", "seed", seed, 0)
    _require_jax()
    import jax
    from botorch.fit import fit_fully_bayesian_model_nuts
    from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP

    # BoTorch copies the training data to JAX when the model is built and JAX defaults to
    # float32: build and sample under a scoped 64-bit switch (the global config is untouched).
    with jax.enable_x64(True):
        model = SaasFullyBayesianSingleTaskGP(
            train_X,
            train_Y,
            train_Yvar=train_Yvar,
            input_transform=input_transform,
            outcome_transform=outcome_transform,
        )
        fit_fully_bayesian_model_nuts(
            model,
            max_tree_depth=max_tree_depth,
            warmup_steps=warmup_steps,
            num_samples=num_samples,
            thinning=thinning,
            disable_progbar=True,
            seed=seed,
        )
    return model


@register_surrogate("ibnn", "SingleTaskGP with the infinite-width BNN (ReLU NNGP) kernel")
def fit_ibnn(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    depth: int = 3,
) -> SingleTaskGP:
    """An exact GP whose kernel is that of an infinitely wide, ``depth``-layer ReLU network
    with iid Gaussian weights and biases (BoTorch's ``InfiniteWidthBNNKernel``).

    The kernel is not stationary and has no lengthscale: it depends on the inputs' norms and
    angles, so it is meant for inputs in the unit cube, which the input normalization provides.
    Its weight and bias variances (which also set the output scale) and the noise are fitted
    by maximizing the marginal likelihood, starting from ``weight_var = 10, bias_var = 5``
    rather than the kernel's own ``0.69`` (softplus(0)): from there the fit often stalls in
    the optimum that explains all data as noise (measured on smooth 2-6-d test functions
    with 15 points: 16 of 36 fits collapsed from 0.69, none from 10/5). Both variances are
    bounded above by 100: on near-linear targets the bias variance otherwise runs off (the
    I-BNN's linear limit, like an RBF lengthscale running to infinity) until the kernel matrix
    is numerically singular and the fit fails (the same data plus two linear targets: 11 of
    45 fits failed unbounded, 7 with a bound of 1000, none with 100, which also gave the
    lowest held-out error).

    Args:
        depth: Number of hidden layers of the infinite-width network.
    """
    depth = _check_int("ibnn", "depth", depth, 1)
    kernel = InfiniteWidthBNNKernel(depth=depth)
    kernel.register_constraint("raw_weight_var", Interval(0.0, IBNN_MAX_VAR))
    kernel.register_constraint("raw_bias_var", Interval(0.0, IBNN_MAX_VAR))
    model = SingleTaskGP(
        train_X,
        train_Y,
        train_Yvar=train_Yvar,
        covar_module=kernel,
        input_transform=input_transform,
        outcome_transform=outcome_transform,
    )
    kernel.weight_var = IBNN_INIT_WEIGHT_VAR
    kernel.bias_var = IBNN_INIT_BIAS_VAR
    return _fit_exact_mll(model)
