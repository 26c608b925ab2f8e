"""The one reader of a results directory's plan side: its manifest (bounded), the plan file it names, and that
plan read by task with its hash checked (refused when it is another plan than the run's). report/ and
report/export/ both read runs through it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.plans.errors import PlanError
from lmeval.plans.limits import MAX_MANIFEST_BYTES, InputError, loads_json, open_regular
from lmeval.plans.plan import DocRecord, InstanceRecord, PlanHeader, PlanReader, read_header
from lmeval.plans.scored import ScoredRun


@dataclass
class PlanTask:
    """One task of a plan: its documents, and per document its Instances in file order."""

    docs: dict[int, DocRecord] = field(default_factory=dict)
    instances: dict[int, list[InstanceRecord]] = field(default_factory=dict)


def read_manifest_bounded(path: Path) -> dict[str, Any]:
    """A run's manifest.json, size-bounded; ``PlanError`` naming the file when it is missing or malformed."""
    try:
        with open_regular(path, max_bytes=MAX_MANIFEST_BYTES, what="manifest") as f:
            data = loads_json(f.read())
    except InputError as e:
        raise PlanError(f"{e}; not a results directory?") from None
    except ValueError as e:
        raise PlanError(f"{path}: malformed manifest: {e}") from None
    if not isinstance(data, dict):
        raise PlanError(f"{path}: malformed manifest (not a JSON object)")
    return data


def resolve_plan(results_dir: Path, manifest: dict[str, Any], results: ScoredRun) -> str:
    """The plan file a run names (results.json, else the manifest), relative names tried beside the run."""
    name = str(results.plan_path or manifest.get("plan_path") or "")
    if not name:
        return ""
    p = Path(name)
    if not p.is_absolute() and not p.exists() and (results_dir / p).exists():
        p = results_dir / p
    return os.fspath(p)


def read_plan_by_task(path: str, expected_hash: str) -> tuple[PlanHeader, dict[str, PlanTask]]:
    """Every document and Instance of the plan at ``path``, hash verified; ``PlanError`` when it is another plan
    than ``expected_hash`` (if given), a record names a task not in the header, or an Instance comes before its
    document."""
    header = read_header(path)
    if expected_hash and header.plan_hash != expected_hash:
        raise PlanError(f"{path}: is plan {header.plan_hash[:12]}, but the results came from plan {expected_hash[:12]}")
    tasks = {t.name: PlanTask() for t in header.tasks}
    with PlanReader(path, verify=True) as r:
        for rec in r:
            tp = tasks.get(rec.task)
            if tp is None:
                raise PlanError(f"{path}: record of task {rec.task!r}, which is not in the plan header")
            if isinstance(rec, DocRecord):
                tp.docs[rec.doc_id] = rec
            elif isinstance(rec, InstanceRecord):
                if rec.doc_id not in tp.docs:
                    raise PlanError(f"{path}: task {rec.task} doc {rec.doc_id}: Instance before its document")
                tp.instances.setdefault(rec.doc_id, []).append(rec)
    return header, tasks
