"""Weights & Biases tracking of a campaign, offline by default.

``mode="offline"`` writes the W&B run under the run directory (``wandb sync`` uploads it later),
so no account or network is needed; every run also writes its own CSV/JSON/PNG, so nothing
depends on a W&B server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dsbo.storage import Trial


class WandbTracker:
    """Logs each finished trial and the final summary and trace plot to a W&B run."""

    def __init__(
        self,
        run_dir: str | Path,
        config: dict[str, Any],
        mode: str = "offline",
        project: str = "dsbo",
        entity: str | None = None,
        name: str | None = None,
        tags: list[str] | None = None,
    ) -> None:
        self.run = None
        if mode == "disabled":
            return
        import wandb

        os.environ.setdefault("WANDB_SILENT", "true")
        self.run = wandb.init(
            project=project,
            entity=entity,
            name=name or Path(run_dir).name,
            tags=tags or [],
            dir=str(run_dir),
            mode=mode,
            config=config,
            reinit="finish_previous",
        )

    def log_trials(self, trials: list[Trial], best_value: float | None, outcome_names: tuple[str, ...]) -> None:
        if self.run is None:
            return
        for t in trials:
            row: dict[str, Any] = {"trial": t.id, "failed": int(t.status == "failed")}
            if t.y is not None:
                row.update(dict(zip(outcome_names, t.y, strict=True)))
            if best_value is not None:
                row["best_so_far"] = best_value
            if "num_changed" in t.metadata:
                row["num_changed"] = t.metadata["num_changed"]
            self.run.log(row, step=t.id)

    def finish(self, summary: dict[str, Any], trace_png: Path | None) -> None:
        if self.run is None:
            return
        import wandb

        flat = {k: v for k, v in summary.items() if isinstance(v, int | float | str) or v is None}
        flat.update({f"seconds_per_iteration/{k}": v for k, v in summary["seconds_per_iteration"].items()})
        self.run.summary.update(flat)
        if trace_png is not None and trace_png.exists():
            self.run.log({"trace": wandb.Image(str(trace_png))})
        self.run.finish()
