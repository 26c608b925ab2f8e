"""What an export reads of one scored run: manifest, results.json, samples.parquet, result rows and the plan.

``read_samples`` is the one place the scorer's per-sample file is read (its name and columns are the
scorer's; a typed reader may replace this function without touching the writers).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans.errors import PlanError
from lmeval.plans.io import PlanReader, read_header
from lmeval.plans.records import DocRecord, InstanceRecord, PlanHeader
from lmeval.plans.results import MANIFEST, read_results
from lmeval.report.errors import ReportError
from lmeval.report.inputs import resolve_plan
from lmeval.scorer.score import RESULTS_JSON, SAMPLES_PARQUET


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


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f, parse_constant=lambda c: {"NaN": math.nan, "Infinity": math.inf}.get(c, -math.inf))
    except FileNotFoundError:
        raise ReportError(f"{path}: missing ({what})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: cannot read ({e})") from None
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: malformed JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: malformed {what} (not a JSON object)")
    return data


def read_samples(results_dir: Path) -> pl.DataFrame:
    """The scorer's per-sample table of ``results_dir`` (task, doc_id, filter, target, filtered, metric
    columns, ``items`` JSON of the non-numeric per-sample values)."""
    sp = results_dir / SAMPLES_PARQUET
    try:
        samples = pl.read_parquet(sp)
    except FileNotFoundError:
        raise ReportError(f"{sp}: missing; score the run first (`lmeval score {results_dir}`)") from None
    except (OSError, pl.exceptions.PolarsError) as e:
        raise ReportError(f"{sp}: unreadable ({type(e).__name__})") from None
    for col, dtype in (("task", pl.String), ("doc_id", pl.Int64), ("filter", pl.String)):
        if samples.schema.get(col) != dtype:
            raise ReportError(f"{sp}: column {col!r} missing or not {dtype}")
    return samples


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
    manifest = _read_json(d / MANIFEST, "run manifest; not a results directory?")
    results = _read_json(d / RESULTS_JSON, f"not a scored run; run `lmeval score {path}` first")
    samples = read_samples(d)
    plan_path = plan or resolve_plan(d, manifest, results)
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
