"""Scores of recorded conversations (``kind: trajectory`` tasks, compiler/trajectories.py): per step, the
reply's log-likelihood given everything before it, its tokens and whether it is the model's greedy choice (every
token the argmax); per trajectory, their sum, the mean per token (sum / tokens) and the share of greedy steps.
Read from a results directory and its plan; ``lmeval trajectories RESULTS`` prints them."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lmeval.plans import DocRecord, InstanceRecord, PlanReader, plan_of, read_manifest, read_results
from lmeval.scorer.errors import ScoreError


@dataclass(frozen=True)
class StepScore:
    task: str
    trajectory: str
    step: int  # the reply's index among the trajectory's messages
    doc_id: int
    loglikelihood: float
    n_tokens: int
    is_greedy: bool


@dataclass(frozen=True)
class TrajectoryScore:
    task: str
    trajectory: str
    steps: int
    loglikelihood: float  # summed over its steps
    n_tokens: int
    loglikelihood_per_token: float  # loglikelihood / n_tokens
    greedy: float  # the share of its steps that are the model's greedy choice

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_trajectory_task(config: dict[str, Any]) -> bool:
    meta = config.get("metadata")
    return isinstance(meta, dict) and "trajectory_file" in meta and config.get("output_type") == "loglikelihood"


def step_scores(results_dir: str | Path) -> list[StepScore]:
    """Every scored step of the run's trajectory tasks, in plan order; ``ScoreError`` when the run has none or
    lacks a step's result."""
    rdir = str(results_dir)
    manifest = read_manifest(rdir)
    rows = read_results(rdir)
    by_id = {r["instance_id"]: r for r in rows.iter_rows(named=True)}
    out: list[StepScore] = []
    with PlanReader(plan_of(rdir, manifest)) as reader:
        if reader.header.plan_hash != manifest.plan_hash:
            raise ScoreError(f"{rdir}: its plan has changed (plan_hash differs from the manifest's)")
        tasks = [t.name for t in reader.header.tasks if is_trajectory_task(t.config)]
        if not tasks:
            raise ScoreError(f"{rdir}: the run has no trajectory task (+task=trajectory)")
        for task in tasks:
            doc: DocRecord | None = None
            for rec in reader.records(task=task):
                if isinstance(rec, DocRecord):
                    doc = rec
                    continue
                assert isinstance(rec, InstanceRecord) and doc is not None
                row = by_id.get(rec.instance_id)
                if row is None or row["loglikelihood"] is None:
                    raise ScoreError(f"{rdir}: task {task}: no result for doc {rec.doc_id} (run it to the end)")
                n = row["n_continuation_tokens"]
                if n is None:
                    n = len(rec.continuation_ids or [])
                tid, step = _step_of(doc, rdir, task)
                out.append(StepScore(task, tid, step, rec.doc_id, float(row["loglikelihood"]), int(n),
                                     bool(row["is_greedy"])))  # fmt: skip
    return out


def _step_of(doc: DocRecord, rdir: str, task: str) -> tuple[str, int]:
    """A step document's (trajectory id, step): what compiler/trajectories.py writes; ``ScoreError`` (one line
    naming the document and field) for a plan that holds anything else (forged, hashes and all)."""
    d = doc.doc if isinstance(doc.doc, dict) else {}
    tid, step = d.get("trajectory"), d.get("step")
    if type(tid) is not str:
        raise ScoreError(f"{rdir}: task {task}: doc {doc.doc_id}: field 'trajectory' is not a trajectory id (a string)")
    if type(step) is not int or step < 1:
        raise ScoreError(f"{rdir}: task {task}: doc {doc.doc_id}: field 'step' is not a message index (an integer > 0)")
    return tid, step


def trajectory_scores(steps: list[StepScore]) -> list[TrajectoryScore]:
    """Per trajectory (in order of first step): sum, mean per token and greedy share of its steps."""
    groups: dict[tuple[str, str], list[StepScore]] = {}
    for s in steps:
        groups.setdefault((s.task, s.trajectory), []).append(s)
    out = []
    for (task, tid), ss in groups.items():
        ll = math.fsum(s.loglikelihood for s in ss)
        n = sum(s.n_tokens for s in ss)
        greedy = sum(s.is_greedy for s in ss) / len(ss)
        out.append(TrajectoryScore(task, tid, len(ss), ll, n, ll / n if n else float("nan"), greedy))
    return out
