"""Adapters to other tools; each imports its peer library lazily; nothing in dsbo imports this
package.

The top layer, beside :mod:`dsbo.cli`: an adapter may import every package of dsbo, and lives
in a module of its own that imports its peer library (an optional extra) at the top, so that
importing this package pulls in none of them. :mod:`~dsbo.integrations.lightning` holds
:class:`~dsbo.integrations.lightning.ReportCallback`, a PyTorch Lightning callback that
reports a trial's validation metric to dsbo and stops ``Trainer.fit`` when the trial's
stopping rule says so or its step budget ends (for ``pytorch_lightning`` and, with the
``lightning`` extra, ``lightning.pytorch`` Trainers; the validation schedule it predicts is
:mod:`~dsbo.integrations.lightning_schedule`'s). :mod:`~dsbo.integrations.optuna` holds
:class:`~dsbo.integrations.optuna.DsboSampler`, an Optuna sampler whose proposals come from
dsbo's search (the ``optuna`` extra); :mod:`~dsbo.integrations.optuna_study` mirrors a study's
trials into dsbo's store (pruned trials as stopped ones), :mod:`~dsbo.integrations.optuna_internals`
holds every Optuna internal it touches. :mod:`~dsbo.integrations.studies` (CSV, JSON) and
:mod:`~dsbo.integrations.studies_optuna` (Optuna, Ax; imported inside its functions) bring
studies in as rows for ``import_trials`` and write a dsbo run out as CSV, JSON or an Optuna study.
:mod:`~dsbo.integrations.ray` holds :class:`~dsbo.integrations.ray.DsboSearch`, a Ray Tune
searcher whose every configuration is a dsbo proposal (the ``ray`` extra), with
:mod:`~dsbo.integrations.ray_space` (Ray's ``param_space``) and :mod:`~dsbo.integrations.ray_trials`
(how each Ray trial ended: completed, stopped early by a scheduler, failed).
"""
