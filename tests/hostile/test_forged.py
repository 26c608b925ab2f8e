"""The forged-plan family covers every header and record field, and the scorer's own one-pass plan loader
(``scorer/planload.py``, which does not go through ``PlanReader``) refuses forged plans as the CLI readers do."""

from __future__ import annotations

import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from lmeval.plans.plan import DocRecord, GroupSummary, InstanceRecord, ModelInfo, PlanHeader, TaskSummary
from tests.hostile.cases_forged import _FORGED
from tests.hostile.corpus import DATA, PY, env
from tests.hostile.forge import forge

# fields where every canonical value is a valid one (shown, never computed with)
ANY_VALUE = {"TaskSummary.version", "GroupSummary.version", "DocRecord.target"}
PREFIX = {
    PlanHeader: "h_",
    TaskSummary: "h_task_",
    ModelInfo: "h_model_",
    GroupSummary: "h_groups",
    DocRecord: "d_",
    InstanceRecord: "i_",
}


def test_forged_family_covers_every_header_and_record_field() -> None:
    names = [n for n, *_ in _FORGED] + ["h_plan_hash_empty"]
    missing = []
    for cls, prefix in PREFIX.items():
        for f in fields(cls):
            key = f"{cls.__name__}.{f.name}"
            if key in ANY_VALUE:
                continue
            stem = prefix if cls is GroupSummary else prefix + f.name
            alias = {
                "TaskSummary.name": "h_task_name_twice",
                "PlanHeader.tasks": "h_no_tasks",
                "PlanHeader.model": "h_model_not_a_map",
                "PlanHeader.extra": "h_extra",
            }.get(key)
            if not any(n.startswith(stem) or n == alias for n in names):
                missing.append(key)
    assert missing == []


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("forged") / "arith.msgpack"
    r = subprocess.run(
        [PY, "-m", "lmeval", "compile", "+task=arith", "run.limit=3", f"run.data_dir={DATA}", "--out", str(p)],
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return p


@pytest.mark.parametrize(
    ("field", "value"), [("request_hash", "0" * 64), ("instance_id", "zz"), ("repeats", 0), ("context_ids", ["a"])]
)
def test_scorer_loader_refuses_forged_plans(plan: Path, tmp_path: Path, field: str, value: object) -> None:
    from lmeval.scorer.errors import ScoreError
    from lmeval.scorer.planload import load

    def edit(objs: list[dict[str, object]]) -> None:
        [o for o in objs if o["kind"] == "instance"][1][field] = value

    forged = forge(plan, tmp_path / "f.msgpack", records=edit, rehash=field != "request_hash")
    with pytest.raises(ScoreError, match=f"{forged}: invalid plan record: task 'arith' doc 1: {field}"):
        load(str(forged), str(tmp_path / "r"))
    assert load(str(plan), str(tmp_path / "r")).header.n_instances == 3  # the genuine plan loads


def test_forge_without_edits_gives_a_plan_that_validates(plan: Path, tmp_path: Path) -> None:
    from lmeval.plans.plan import read_plan

    assert len(read_plan(forge(plan, tmp_path / "same.msgpack")).instances) == 3
