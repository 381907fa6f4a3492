"""Runtime: evaluating trials and driving campaigns and sweeps to their budgets.

:mod:`~dsbo.runtime.evaluation` runs evaluations in this process or through any
``concurrent.futures.Executor``, with timeouts and retries of dead workers;
:mod:`~dsbo.runtime.executors` holds the executors dsbo ships (a pool of worker processes that
replaces a dead worker, Dask); :mod:`~dsbo.runtime.parallel` is the driver that keeps
``parallel`` trials in flight on a campaign (and shares a PostgreSQL store with other
workers), and both end a run as :mod:`~dsbo.runtime.run_end` says (failures in a row keep
their result; a run with no completed evaluation warns); :mod:`~dsbo.runtime.sweep` runs W&B sweep files (grid, random, and bayes on a
campaign) with :mod:`~dsbo.runtime.sweep_config` reading them,
:mod:`~dsbo.runtime.hyperband` stopping runs early (``early_terminate``) from the histories
:mod:`~dsbo.runtime.run_history` reads, and :mod:`~dsbo.runtime.sweep_report` writing a
sweep's HTML report; :mod:`~dsbo.runtime.tuner` is the five-line API.

May import everything below it (errors, space, storage, problems, surrogates, acquisition,
contexts, campaign, analysis); nothing below imports it, except ``Campaign.evaluate`` and
``Campaign.run``, which hand their campaign to the driver.
"""
