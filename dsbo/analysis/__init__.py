"""Analysis: what a run leaves to look at.

:mod:`~dsbo.analysis.report` turns a campaign's history into ``summary.json`` content and
``trace.png``, and :mod:`~dsbo.analysis.outputs` writes a run directory's outputs;
:mod:`~dsbo.analysis.tracking` logs trials and summaries to W&B (offline by default);
:mod:`~dsbo.analysis.forecast_baselines` computes and scores the classical forecasting
baselines HiReD is compared with (seasonal naive, ETS reconciled bottom-up and by MinT).
Plotting and tracking libraries (matplotlib, wandb, statsforecast) are imported here and only
here, inside the functions that use them where they are slow to import.

May import: errors, space, storage, problems, data, and the zoo's metrics; never acquisition,
campaign, runtime or cli (it reads their results as data).
"""
