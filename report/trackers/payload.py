"""What every tracker is sent of one scored run, read through the scored-run contract (``plans.scored``):

- ``config``: the run's provenance (lmeval version, plan hash and path, the plan's model identity, the
  manifest's run: backend, engine args, versions; bootstrap resamples, n-shot, task versions, n-samples);
- ``results``: the results table, one row per task (or group), metric and filter: ``RESULT_COLUMNS``;
- ``metrics``: ``"TASK/METRIC,FILTER"`` and ``"TASK/METRIC_stderr,FILTER"`` -> value (finite numbers only);
- ``samples``: samples.parquet as a table, one row per task, document and filter (its columns, its order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.plans import PlanError, ScoredRun, read_scored
from lmeval.report.errors import ReportError

TABLE_COLUMNS = ("task", "filter", "metric", "value", "stderr")
STDERR = "_stderr"


@dataclass
class Payload:
    """One scored run as trackers log it (module docstring)."""

    results_dir: Path
    name: str
    """The default run name: the results directory's name and the plan hash's first 12 digits."""
    config: dict[str, Any]
    results: list[list[Any]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    sample_columns: list[str] = field(default_factory=list)
    samples: list[list[Any]] = field(default_factory=list)


def number(v: Any) -> float | None:
    """A metric value as a float (``"nan"``/``"inf"`` as results.json writes them too); None for "N/A" or null."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def result_rows(run: ScoredRun) -> list[list[Any]]:
    """The results table: task (or group), filter, metric, value, stderr, in lm-eval's table order."""
    _, order = run.depths()
    rows: list[list[Any]] = []
    for task in order:
        metrics = run.results[task]
        for key, value in metrics.items():
            metric, sep, filt = key.partition(",")
            if not sep or metric.endswith(STDERR):
                continue
            stderr = number(metrics.get(f"{metric}{STDERR},{filt}"))
            rows.append([task, filt, metric, number(value), stderr])
    return rows


def run_metrics(rows: list[list[Any]]) -> dict[str, float]:
    """``TASK/METRIC,FILTER`` and ``TASK/METRIC_stderr,FILTER`` -> value, the finite ones."""
    out: dict[str, float] = {}
    for task, filt, metric, value, stderr in rows:
        if value is not None and math.isfinite(value):
            out[f"{task}/{metric},{filt}"] = value
        if stderr is not None and math.isfinite(stderr):
            out[f"{task}/{metric}{STDERR},{filt}"] = stderr
    return out


def lmeval_version() -> str:
    """The installed lmeval's version (the one logging)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lmeval")
    except PackageNotFoundError:
        return "0"


def provenance(run: ScoredRun, results_dir: Path) -> dict[str, Any]:
    """The run's config for a tracker: what produced these numbers."""
    return {
        "lmeval_version": lmeval_version(),
        "plan_hash": run.plan_hash,
        "plan_path": run.plan_path,
        "results_dir": str(results_dir.resolve()),
        "model": run.model,
        "run": run.run,
        "bootstrap_iters": run.bootstrap_iters,
        "n-shot": run.n_shot,
        "versions": run.versions,
        "n-samples": run.n_samples,
        "partial": sorted(run.partial),
    }


def load_payload(results_dir: str) -> Payload:
    """The payload of a scored results directory; ``ReportError`` (one line) when it is not one."""
    d = Path(results_dir)
    if not d.is_dir():
        raise ReportError(f"{results_dir}: no such results directory")
    try:
        scored = read_scored(d)
    except PlanError as e:
        raise ReportError(str(e)) from None
    run = scored.results
    rows = result_rows(run)
    name = f"{d.resolve().name}-{run.plan_hash[:12]}" if run.plan_hash else d.resolve().name
    frame = scored.samples
    return Payload(
        results_dir=d,
        name=name,
        config=provenance(run, d),
        results=rows,
        metrics=run_metrics(rows),
        sample_columns=list(frame.columns),
        samples=[list(r) for r in frame.iter_rows()],
    )
