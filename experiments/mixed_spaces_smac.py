"""The ``smac3`` arm of ``mixed_spaces.py``: SMAC3 2.4's hyperparameter-optimization facade
(a random forest over the configuration space, conditions native: an inactive parameter is
imputed by the forest, log scales and integers as ConfigSpace declares them; expected
improvement maximized by local and random search; 20% of the configurations interleaved at
random), asked and told one configuration at a time on the same evaluation code as every other
arm. Its defaults otherwise (``HyperparameterOptimizationFacade``, its initial design of
``max(10, ...)`` Sobol configurations capped at a quarter of ``n_trials``), ``deterministic=True``
(every arm evaluates each configuration once), the run's ``seed``.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from mixed_spaces_problems import MixedProblem, Recorder


def config_space(problem: MixedProblem, seed: int) -> Any:
    """The dsbo space of ``problem`` as a ConfigSpace: ``Float``/``Int`` (with ``log``) and
    ``Categorical`` hyperparameters; a ``when=`` condition on one parent value is an
    ``EqualsCondition``, on several an ``InCondition``, on several parents their
    ``AndConjunction``."""
    from ConfigSpace import (
        AndConjunction,
        Categorical,
        ConfigurationSpace,
        EqualsCondition,
        Float,
        InCondition,
        Integer,
    )

    from dsbo.space import Choice
    from dsbo.space import Float as DsboFloat
    from dsbo.space import Int as DsboInt

    space = ConfigurationSpace(seed=seed)
    hyperparameters: dict[str, Any] = {}
    for name, p in problem.space.items():
        if isinstance(p, DsboFloat):
            hyperparameters[name] = Float(name, (p.low, p.high), log=p.log)
        elif isinstance(p, DsboInt):
            hyperparameters[name] = Integer(name, (p.low, p.high), log=p.log)
        elif isinstance(p, Choice):
            hyperparameters[name] = Categorical(name, [str(v) for v in p.values])
        else:
            raise TypeError(f"{problem.name}.{name}: no ConfigSpace type for {type(p).__name__}")
    space.add(list(hyperparameters.values()))
    conditions = []
    for name, p in problem.space.items():
        parts = []
        for parent, allowed in p.conditions.items():
            values = [str(v) for v in allowed]
            child, node = hyperparameters[name], hyperparameters[parent]
            if len(values) == 1:
                parts.append(EqualsCondition(child, node, values[0]))
            else:
                parts.append(InCondition(child, node, values))
        if len(parts) == 1:
            conditions.append(parts[0])
        elif parts:
            conditions.append(AndConjunction(*parts))
    if conditions:
        space.add(conditions)
    return space


def user_values(problem: MixedProblem, config: dict[str, Any]) -> dict[str, Any]:
    """A SMAC configuration's values in the dsbo space's types: categories back from their
    strings (booleans included), integers as ``int``, floats as ``float``."""
    from dsbo.space import Choice, Int

    params: dict[str, Any] = {}
    for name, value in config.items():
        p = problem.space[name]
        if isinstance(p, Choice):
            params[name] = next(v for v in p.values if str(v) == str(value))
        elif isinstance(p, Int):
            params[name] = int(value)
        else:
            params[name] = float(value)
    return params


def run_smac(problem: MixedProblem, seed: int, budget: int, f: Recorder) -> dict[str, Any]:
    from smac import HyperparameterOptimizationFacade, Scenario
    from smac.runhistory.dataclasses import TrialValue

    with tempfile.TemporaryDirectory(prefix="smac3-") as folder:
        scenario = Scenario(
            config_space(problem, seed),
            deterministic=True,
            n_trials=budget,
            seed=seed,
            output_directory=folder,
        )
        smac = HyperparameterOptimizationFacade(
            scenario,
            lambda config, seed=0: 0.0,  # never called: the run asks and tells
            overwrite=True,
            logging_level=40,
        )
        times = []
        for _ in range(budget):
            t0 = time.perf_counter()
            info = smac.ask()
            times.append(time.perf_counter() - t0)
            value = f(user_values(problem, dict(info.config)))
            smac.tell(info, TrialValue(cost=value))
    return {"proposal_times": times}
