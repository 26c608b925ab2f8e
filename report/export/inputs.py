"""What an export reads of one scored run: manifest, the scored-run files (results.json and samples.parquet,
through their contract ``plans.scored``), result rows and the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import (
    MANIFEST,
    PlanError,
    PlanHeader,
    PlanTask,
    read_manifest_bounded,
    read_plan_by_task,
    read_results,
    read_scored,
    reraised_as,
    resolve_plan,
)
from lmeval.report.errors import ReportError

TaskPlan = PlanTask  # one task of the plan (plans.resultsdir); its Instances sorted by idx here


@dataclass
class ExportRun:
    path: Path
    manifest: dict[str, Any]
    results: dict[str, Any]
    samples: pl.DataFrame
    rows: dict[str, dict[str, Any]]  # instance_id -> result row
    header: PlanHeader
    tasks: dict[str, TaskPlan]


def read_plan_tasks(path: str, expected_hash: str) -> tuple[PlanHeader, dict[str, TaskPlan]]:
    """Every document and Instance of the plan at ``path`` (hash verified; refused if another plan)."""
    with reraised_as(ReportError):
        header, tasks = read_plan_by_task(path, expected_hash)
    for tp in tasks.values():
        for insts in tp.instances.values():
            insts.sort(key=lambda i: i.idx)
    return header, tasks


def load_export_run(path: str, plan: str | None = None) -> ExportRun:
    """A scored results directory and its plan (``plan``: another path to it than the one the run names)."""
    d = Path(path)
    if not d.is_dir():
        raise ReportError(f"{path}: no such results directory")
    with reraised_as(ReportError):
        manifest = read_manifest_bounded(d / MANIFEST)
        scored = read_scored(d)
    results, samples = scored.results.to_dict(), scored.samples
    plan_path = plan or resolve_plan(d, manifest, scored.results)
    if not plan_path or not Path(plan_path).is_file():
        raise ReportError(f"{path}: its plan {plan_path or '(not named)'} is not there (give it with --plan)")
    ph = str(results.get("plan_hash") or manifest.get("plan_hash") or "")
    header, tasks = read_plan_tasks(plan_path, ph)
    try:
        df = read_results(d)
    except PlanError as e:
        raise ReportError(str(e)) from None
    except (OSError, pl.exceptions.PolarsError) as e:
        raise ReportError(f"{path}: unreadable result parts ({type(e).__name__})") from None
    rows = {r["instance_id"]: r for r in df.iter_rows(named=True)}
    return ExportRun(d, manifest, results, samples, rows, header, tasks)
