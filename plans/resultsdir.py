"""A results directory's plan read by task, its hash checked (refused when it is another plan than the run's).
report/ and report/export/ both read plans through it; the run itself is opened by ``plans.openrun.open_run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lmeval.plans.errors import PlanError
from lmeval.plans.plan import DocRecord, InstanceRecord, PlanHeader, PlanReader, read_header


@dataclass
class PlanTask:
    """One task of a plan: its documents, and per document its Instances in file order."""

    docs: dict[int, DocRecord] = field(default_factory=dict)
    instances: dict[int, list[InstanceRecord]] = field(default_factory=dict)


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
