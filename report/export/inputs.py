"""What an export reads of one scored run: manifest, the scored-run files (results.json and samples.parquet,
through their contract ``plans.scored``), result rows and the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import (
    PlanError,
    PlanHeader,
    PlanTask,
    open_run,
    read_plan_by_task,
    reraised_as,
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
        opened = open_run(path, plan=plan)  # manifest, results.json (its plan checked against the manifest's), samples
    assert opened.scored is not None
    results, samples, manifest = opened.scored.results.to_dict(), opened.scored.samples, opened.fields
    plan_path = opened.plan_path
    if not plan_path or not Path(plan_path).is_file():
        raise ReportError(f"{path}: its plan {plan_path or '(not named)'} is not there (give it with --plan)")
    header, tasks = read_plan_tasks(plan_path, opened.plan_hash)
    try:
        df = opened.rows()
    except PlanError as e:
        raise ReportError(str(e)) from None
    except (OSError, pl.exceptions.PolarsError) as e:
        raise ReportError(f"{path}: unreadable result parts ({type(e).__name__})") from None
    rows = {r["instance_id"]: r for r in df.iter_rows(named=True)}
    return ExportRun(d, manifest, results, samples, rows, header, tasks)
