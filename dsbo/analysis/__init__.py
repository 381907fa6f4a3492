"""Analysis: what a run leaves to look at.

:mod:`~dsbo.analysis.summary` and :mod:`~dsbo.analysis.trace` turn a campaign's history into
``summary.json`` content and ``trace.png``; the HTML report is gathered by
:mod:`~dsbo.analysis.report_data` (kept with the run by :mod:`~dsbo.analysis.report_cache`)
and drawn by :mod:`~dsbo.analysis.html_report`; :mod:`~dsbo.analysis.outputs` writes a run
directory's outputs;
:mod:`~dsbo.analysis.curves` reads the trials' learning curves in the user's direction (the
report's curve panels, ``curves.csv``);
:mod:`~dsbo.analysis.tracking` logs trials, curves and summaries to W&B (offline by default);
:mod:`~dsbo.analysis.forecast_baselines` computes and scores the classical forecasting
baselines HiReD is compared with (seasonal naive, ETS reconciled bottom-up and by MinT).
Plotting and tracking libraries (matplotlib, wandb, statsforecast) are imported here and only
here, inside the functions that use them where they are slow to import.

May import: errors, space, storage, problems, data, surrogates, acquisition (posterior
moments), campaign (the report fits a run's surrogate with ``Campaign.fit_model``) and the
zoo's metrics; never runtime or cli (it reads their results as data).
"""
