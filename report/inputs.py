"""Read what a report shows about one run: its manifest, results.json, samples.parquet, result rows and
(when the file is still there) the plan the run came from.

Everything is checked on the way in: a results directory that is missing, unscored, malformed, or whose plan
file is a different plan than the one it ran, is a one-line ``ReportError`` naming the file. A plan that is
no longer on disk is not an error: the report then shows no prompts or choices for that run and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.plans import (
    InstanceRecord,
    PlanHeader,
    ScoredRun,
    open_run,
    read_plan_by_task,
    reraised_as,
)
from lmeval.report.errors import ReportError


@dataclass
class InstanceView:
    """What the report shows of one Instance of the plan."""

    idx: int
    request_type: str
    context: str
    continuation: str | None
    n_context_ids: int | None
    n_continuation_ids: int | None
    max_gen_toks: int | None
    until: list[str] | None = None  # generate_until: the stop sequences
    media: list[dict[str, Any]] | None = None  # the images it shows (plans/plan/media.py:MediaRef maps)


@dataclass
class DocView:
    doc_id: int
    target: Any
    choices: list[str] | None
    fewshot_ids: list[int]
    instances: list[InstanceView] = field(default_factory=list)


@dataclass
class PlanView:
    """The plan's documents and Instances by task (prompts, choices, token counts), read once per plan."""

    path: str
    header: PlanHeader
    tasks: dict[str, dict[int, DocView]]


@dataclass
class Run:
    """One scored results directory."""

    index: int
    path: str  # as given on the command line
    label: str  # short name shown in the page (unique among the runs)
    manifest: dict[str, Any]
    results: ScoredRun  # results.json
    samples: pl.DataFrame  # samples.parquet
    rows: pl.DataFrame
    plan_path: str
    plan: PlanView | None
    notes: list[str] = field(default_factory=list)  # what could not be read, shown under Diagnostics

    @property
    def plan_hash(self) -> str:
        return str(self.results.plan_hash or self.manifest.get("plan_hash") or "")


def load_run(index: int, path: str, plans: dict[str, PlanView | None]) -> Run:
    """Read results directory ``path``; ``plans`` caches PlanViews by plan hash (runs of one plan share it)."""
    d = Path(path)
    if not d.is_dir():
        raise ReportError(f"{path}: no such results directory")
    with reraised_as(ReportError):
        opened = open_run(path)  # manifest, results.json (its plan checked against the manifest's), samples
    assert opened.scored is not None
    results, samples = opened.scored.results, opened.scored.samples
    try:
        with reraised_as(ReportError):
            rows = opened.rows()
    except (OSError, pl.exceptions.PolarsError) as e:
        raise ReportError(f"{path}: unreadable result parts ({type(e).__name__})") from None
    run = Run(index, path, "", opened.fields, results, samples, rows, opened.plan_path, None)
    ph = run.plan_hash
    if ph in plans:
        run.plan = plans[ph]
    elif not run.plan_path or not Path(run.plan_path).is_file():
        run.notes.append(f"plan {run.plan_path or '(not named)'} not found: prompts and choices are not shown")
        plans[ph] = None
    else:
        run.plan = plans[ph] = read_plan_view(run.plan_path, ph)
    return run


def read_plan_view(path: str, expected_hash: str) -> PlanView:
    """Every document and Instance of the plan at ``path``, hash verified, refused if it is another plan."""
    with reraised_as(ReportError):
        header, by_task = read_plan_by_task(path, expected_hash)
    tasks: dict[str, dict[int, DocView]] = {}
    for name, tp in by_task.items():
        docs = tasks[name] = {}
        for doc_id, rec in tp.docs.items():
            docs[doc_id] = DocView(rec.doc_id, rec.target, rec.choices, list(rec.fewshot_ids))
            docs[doc_id].instances = [_instance_view(i) for i in tp.instances.get(doc_id, [])]
    return PlanView(path, header, tasks)


def _instance_view(rec: InstanceRecord) -> InstanceView:
    mgt, until = None, None
    if rec.request_type == "generate_until":
        kw = rec.generation_kwargs or {}
        stops = kw.get("until")
        stops = [stops] if isinstance(stops, str) else stops
        if isinstance(stops, list):
            until = [str(x) for x in stops]
        for alias in ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens"):
            if isinstance(kw.get(alias), int) and not isinstance(kw.get(alias), bool):
                mgt = int(kw[alias])
                break
    return InstanceView(
        rec.idx,
        rec.request_type,
        rec.context,
        rec.continuation,
        None if rec.context_ids is None else len(rec.context_ids),
        None if rec.continuation_ids is None else len(rec.continuation_ids),
        mgt,
        until,
        rec.media,
    )


def label_runs(runs: list[Run]) -> None:
    """Short, unique labels: the directory name, with the parent folder added where two names collide."""
    names = [Path(r.path.rstrip("/")).name or r.path for r in runs]
    for r, name in zip(runs, names, strict=True):
        r.label = name if names.count(name) == 1 else str(Path(r.path.rstrip("/")).parent.name + "/" + name)
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
        if seen[r.label] > 1:
            r.label = f"{r.label} #{seen[r.label]}"
