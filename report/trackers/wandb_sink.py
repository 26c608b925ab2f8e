"""Weights & Biases: one run per scored run, offline unless ``WANDB_MODE`` says otherwise (``wandb sync`` then
uploads it). Config: the provenance; summary: the per-task metrics; two Tables, ``results`` and ``samples``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lmeval.report.trackers.payload import TABLE_COLUMNS, Payload


def log_wandb(p: Payload, store: Path, project: str, name: str) -> str:
    """Log ``p`` as a W&B run in ``store`` (``store/offline-run-*``: wandb adds the last folder, ``wandb``, itself);
    where it went."""
    import wandb
    from wandb.sdk import wandb_setup

    # run.finish() can return before wandb-core has written the run's file; teardown waits for it. Only when
    # this call started wandb: a caller's own runs in the same process are left running.
    owned = getattr(wandb_setup, "_singleton", None) is None
    store.parent.mkdir(parents=True, exist_ok=True)
    mode: Any = os.environ.get("WANDB_MODE") or "offline"  # wandb checks it
    settings = wandb.Settings(silent=True, console="off", x_disable_stats=True, disable_git=True, save_code=False)
    run = wandb.init(
        project=project,
        name=name,
        dir=str(store.parent),
        mode=mode,
        config=p.config,
        settings=settings,
        reinit="create_new",
    )
    ok = False
    try:
        run.log(
            {
                "results": wandb.Table(columns=[*TABLE_COLUMNS], data=p.results),
                "samples": wandb.Table(columns=[*p.sample_columns], data=p.samples),
            }
        )
        run.summary.update(p.metrics)
        ok = True
    finally:
        run.finish(exit_code=0 if ok else 1)
        if owned:
            wandb.teardown()
    where = Path(run.dir).parent
    return f"{where}" + (f" (upload: wandb sync {where})" if mode == "offline" else "")
