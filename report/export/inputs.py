"""What an export reads of one scored run: manifest, the scored-run files (results.json and samples.parquet,
through their contract ``plans.scored``), result rows and the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import (
    MANIFEST,
    DocRecord,
    InstanceRecord,
    PlanError,
    PlanHeader,
    PlanReader,
    read_header,
    read_results,
    read_scored,
)
from lmeval.report.errors import ReportError
from lmeval.report.inputs import read_manifest_bounded, resolve_plan


@dataclass
class TaskPlan:
    """One task of the plan: its documents and, per document, its Instances in ``idx`` order."""

    docs: dict[int, DocRecord] = field(default_factory=dict)
    instances: dict[int, list[InstanceRecord]] = field(default_factory=dict)


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
    try:
        header = read_header(path)
        if expected_hash and header.plan_hash != expected_hash:
            raise ReportError(
                f"{path}: is plan {header.plan_hash[:12]}, but the results came from plan {expected_hash[:12]}"
            )
        tasks = {t.name: TaskPlan() for t in header.tasks}
        with PlanReader(path, verify=True) as r:
            for rec in r:
                tp = tasks.get(rec.task)
                if tp is None:
                    raise ReportError(f"{path}: record of task {rec.task!r}, which is not in the plan header")
                if isinstance(rec, DocRecord):
                    tp.docs[rec.doc_id] = rec
                elif isinstance(rec, InstanceRecord):
                    tp.instances.setdefault(rec.doc_id, []).append(rec)
    except PlanError as e:
        raise ReportError(str(e)) from None
    for tp in tasks.values():
        for insts in tp.instances.values():
            insts.sort(key=lambda i: i.idx)
    return header, tasks


def load_export_run(path: str, plan: str | None = None) -> ExportRun:
    """A scored results directory and its plan (``plan``: another path to it than the one the run names)."""
    d = Path(path)
    if not d.is_dir():
        raise ReportError(f"{path}: no such results directory")
    manifest = read_manifest_bounded(d / MANIFEST)
    try:
        scored = read_scored(d)
    except PlanError as e:
        raise ReportError(str(e)) from None
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
