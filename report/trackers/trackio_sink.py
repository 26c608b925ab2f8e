"""Trackio: one run per scored run in project ``project``, in the local store (``TRACKIO_DIR`` when set, else
the tracker folder; ``TRACKIO_DIR=DIR trackio show`` opens it). Config: the provenance; one logged step with the
per-task metrics and two tables, ``results`` and ``samples`` (``trackio.Table``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from lmeval.report.trackers.payload import TABLE_COLUMNS, Payload


def _import_trackio(store: Path) -> Any:
    """trackio, reading its store folder from ``TRACKIO_DIR`` at import: ours unless the user set one (or it was
    imported already, with its own)."""
    if "trackio" in sys.modules or os.environ.get("TRACKIO_DIR"):
        import trackio

        return trackio
    store.mkdir(parents=True, exist_ok=True)
    os.environ["TRACKIO_DIR"] = str(store.resolve())
    try:
        import trackio
    finally:
        os.environ.pop("TRACKIO_DIR", None)
    return trackio


def log_trackio(p: Payload, store: Path, project: str, name: str) -> str:
    """Log ``p`` as a Trackio run; where it went."""
    trackio = _import_trackio(store)
    run = trackio.init(project=project, name=name, config=p.config, auto_log_gpu=False, auto_log_cpu=False, embed=False)
    try:
        run.log(
            {
                **p.metrics,
                "results": trackio.Table(columns=list(TABLE_COLUMNS), data=p.results),
                "samples": trackio.Table(columns=p.sample_columns, data=p.samples),
            }
        )
    finally:
        trackio.finish()  # the current run, cleared (else trackio's atexit hook finishes it again, on stdout)
    return f"{trackio.utils.TRACKIO_DIR} (project {project!r}, run {run.name!r})"
