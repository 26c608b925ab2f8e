"""plans.resultsdir: a run's plan read by task, hash checked (manifest and plan file: tests/plans/test_openrun.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmeval.plans import PlanError, read_header, read_plan, read_plan_by_task

ARITH = Path(__file__).resolve().parents[2] / "lock" / "reference" / "arith.msgpack"


def test_the_plan_is_read_by_task_with_every_record() -> None:
    header, tasks = read_plan_by_task(str(ARITH), read_header(ARITH).plan_hash)
    plan = read_plan(ARITH)
    assert sorted(tasks) == sorted(t.name for t in header.tasks)
    assert sum(len(t.docs) for t in tasks.values()) == len(plan.docs)
    assert sum(len(v) for t in tasks.values() for v in t.instances.values()) == len(plan.instances)
    assert all(i.doc_id == d for t in tasks.values() for d, v in t.instances.items() for i in v)


def test_another_plans_results_are_refused() -> None:
    with pytest.raises(PlanError, match=r"is plan [0-9a-f]{12}, but the results came from plan 000000000000"):
        read_plan_by_task(str(ARITH), "0" * 64)
