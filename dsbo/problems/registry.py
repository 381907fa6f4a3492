"""Benchmark problems by name: :func:`get_problem`.

A factory ``factory(**options) -> Problem`` registers under a name with
:func:`register_problem`. A name may end in the dimension pattern ``-{D}d``: the factory
registered as ``"ackley-{D}d"`` serves ``"ackley-5d"`` and is called with ``dim=5``. What
``dim`` means is the factory's business:

- a scalable function (``ackley``, ``levy``, ...) is built in ``D`` dimensions;
- a fixed-dimension problem (``branin``, ``hartmann6``, ...) is *embedded* in ``[0, 1]^D``
  (see :mod:`dsbo.problems.embedded`), so ``"branin-50d"`` is Branin hidden in 50 dims.

Options are checked against the factory's signature, so a misspelled option fails loudly.
Options common to all problems are described in :mod:`dsbo.problems.options`.

:data:`CATALOGUE` names the module that registers each problem dsbo ships; a module is
imported when one of its problems is first asked for (so ``get_problem("branin")`` never
loads scikit-learn for ``svm-hpo``), and this module imports no torch: the names are known
without it (``PROBLEMS.names()``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsbo.errors import ConfigError
from dsbo.registry import Registry

if TYPE_CHECKING:
    from dsbo.problems.base import Problem

ProblemFactory = Callable[..., "Problem"]

DIM_PATTERN = "{D}"
#: Largest dimension a ``-{D}d`` name may ask for (BO beyond it is not meaningful, and a typo
#: such as ``branin-99999999999d`` would otherwise try to allocate hundreds of gigabytes).
MAX_DIM = 10_000

#: The modules that register the problems dsbo ships (``tests/test_registries.py`` checks it).
CATALOGUE: dict[str, tuple[str, ...]] = {
    "dsbo.problems.classic": (
        "branin",
        "hartmann6",
        "ackley",
        "ackley-{D}d",
        "levy",
        "levy-{D}d",
        "rastrigin",
        "rastrigin-{D}d",
        "griewank",
        "griewank-{D}d",
        "schwefel",
        "schwefel-{D}d",
    ),
    "dsbo.problems.embedded": (
        "branin-{D}d",
        "hartmann6-{D}d",
        "dtlz2-{D}d",
        "pressure-vessel-{D}d",
        "branin-currin-{D}d",
    ),
    "dsbo.problems.multi_objective": ("branin-currin", "dtlz2"),
    "dsbo.problems.constrained": ("pressure-vessel",),
    "dsbo.problems.contextual": (
        "contextual-ackley",
        "contextual-eggholder",
        "contextual-hartmann4",
        "contextual-hartmann6",
    ),
    "dsbo.problems.scalarization": ("circle-front", "branin4-currin4", "gp-samples-6"),
    "dsbo.problems.cost_aware": ("cost-branin",),
    "dsbo.problems.black_box": ("black-box",),
    "dsbo.problems.pool": ("pool",),
    "dsbo.problems.faiss_tuning": ("faiss-ivf-tuning",),
    "dsbo.problems.hpo": ("svm-hpo",),
    "dsbo.problems.train_run": ("train-run",),
    "dsbo.problems.registry": ("sourcing",),
}

PROBLEMS: Registry[ProblemFactory] = Registry("problem", CATALOGUE)


def register_problem(
    name: str, description: str = ""
) -> Callable[[ProblemFactory], ProblemFactory]:
    """Decorator: register ``factory`` under ``name``.

    Args:
        name: Lower case with dashes, e.g. ``"branin"``; ``"branin-{D}d"`` registers a whole
            family whose members are called with ``dim=D``.
        description: One line for :func:`available_problems` (defaults to the first line
            of the factory's docstring).

    Example:
        >>> @register_problem("my-branin")
        ... def make_my_branin(noise_std=None, target="center"):
        ...     "Branin with my defaults."
        ...     return from_test_problem("my-branin", Branin(negate=True), target=target)
    """
    if name.count(DIM_PATTERN) > 1 or (DIM_PATTERN in name and not name.endswith("-{D}d")):
        raise ConfigError(
            f"problem name {name!r}: the pattern {DIM_PATTERN} may only end a name as '-{{D}}d'"
        )

    return PROBLEMS.register(name, description)


def available_problems() -> dict[str, str]:
    """Registered problem names (``-{D}d`` marks a family) and one-line descriptions."""
    return PROBLEMS.available()


def _lookup(name: str) -> tuple[str, ProblemFactory, dict[str, int]]:
    """The registered name and factory serving ``name``, and the ``dim`` it implies."""
    if name in PROBLEMS:
        return name, PROBLEMS.get(name), {}
    match = re.fullmatch(r"(.+)-(\d+)d", name)
    if match is not None:
        family = f"{match.group(1)}-{DIM_PATTERN}d"
        if family in PROBLEMS:
            dim = int(match.group(2))
            if not 1 <= dim <= MAX_DIM:
                raise ConfigError(
                    f"problem.name={name!r}: the dimension must be between 1 and {MAX_DIM}, "
                    f"got {dim}"
                )
            return family, PROBLEMS.get(family), {"dim": dim}
    return (
        name,
        PROBLEMS.get(name, hint=" (where -{D}d stands for a dimension, e.g. branin-50d)"),
        {},
    )


def get_problem(name: str, **options: Any) -> Problem:
    """Build the problem registered as ``name`` with the given options.

    Args:
        name: A registered name (see :func:`available_problems`), e.g. ``"hartmann6"``,
            ``"ackley-5d"`` (5-dim Ackley) or ``"branin-50d"`` (Branin embedded in 50 dims).
        **options: Factory options, e.g. ``noise_std``, ``target``, ``embedding_seed``.

    Returns:
        The :class:`Problem`, in the maximization sense.

    Raises:
        ConfigError: if the name is not registered or an option is unknown or invalid.

    Example:
        >>> problem = get_problem("branin-50d", target="zero", embedding_seed=1)
        >>> problem.dim, problem.relevant_dims
        (50, (25, 45))
    """
    if not isinstance(name, str):
        raise ConfigError(f"problem name must be a string, got {name!r}")
    registered, factory, implied = _lookup(name.strip().lower())
    PROBLEMS.check_options(
        registered, options, reserved=("dim",) if DIM_PATTERN in registered else ()
    )
    return factory(**implied, **options)


# ---------------------------------------------------------------- problems defined elsewhere
@register_problem(
    "sourcing", "Content-sourcing simulation of SEBO (appendix F.1), integer policy per source"
)
def _make_sourcing(**options: Any) -> Problem:
    """Imported lazily: ``dsbo.problems.sourcing`` is only loaded when asked for."""
    from dsbo.problems.sourcing import make_sourcing_problem

    return make_sourcing_problem(**options)
