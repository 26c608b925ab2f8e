"""lm-eval 0.5's group paths and overlapping groups (#55), against lm-eval 0.5.0.dev1's own selections and
requests (tests/parity/lm_eval_05/golden/requests.json.gz, cases ``path:...`` and ``overlap_groups``).

- ``GROUP::CHILD`` selects an inline subgroup or a member as 0.5.0.dev1 does, with the overrides the groups
  above it give; what it does not find (``mmlu::humanities``: mmlu lists the registered group
  ``mmlu_humanities``, whose path name is its own) is refused in one line naming the children.
- A task in two groups with different ``num_fewshot`` is two tasks (``GROUP::TASK``), two sets of Instances,
  two scores; the same config in both is one task listed in both groups (its Instances built once).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError
from tests.parity.compare import compare, instance_dicts

GOLDEN = Path(__file__).resolve().parents[2] / "parity" / "lm_eval_05"
YAMLS = GOLDEN / "yaml"


@cache
def golden() -> dict[str, Any]:
    with gzip.open(GOLDEN / "golden" / "requests.json.gz", "rt", encoding="utf-8") as f:
        return dict(json.load(f)["cases"])


def _compile(names: str, data: Path, *extra: str) -> tuple[Any, list[dict[str, Any]]]:
    header, records = compiler.compile_plan(
        [f"run.tasks=[{names}]", f"run.data_dir={data}", "run.limit=3", f"run.include_path={YAMLS}", *extra]
    )
    return header, instance_dicts(records)


def _same_requests(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], what: str) -> None:
    out = compare([dict(d, task="t") for d in ours], [dict(i, task="t") for i in theirs], what, "0.5")
    assert out.ok and out.matched == len(theirs) > 0, f"{what}: {out.first.describe() if out.first else out}"


def _ours_for(key: str, tasks: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """lm-eval 0.5 keys a group's member by its path (GROUP::TASK); ours is so named only where two groups
    give it different configs, else by its own name."""
    return tasks[key] if key in tasks else tasks[key.rsplit("::", 1)[-1]]


PATHS = ["arc_paths::easy", "arc_paths::both", "arc_paths::both::arc_challenge", "lm_eval:mmlu_humanities"]


@pytest.mark.parametrize("path", PATHS)
def test_a_path_selects_what_lm_eval_05_selects(path: str, data: Path) -> None:
    case = golden()[f"path:{path.removeprefix('lm_eval:')}"]
    header, ours = _compile(path, data)
    tasks: dict[str, list[dict[str, Any]]] = {}
    for d in ours:
        tasks.setdefault(d["task"], []).append(d)
    theirs: dict[str, list[dict[str, Any]]] = {}
    for i in case["instances"]:
        theirs.setdefault(i["key"], []).append(i)
    assert len(tasks) == len(theirs) == len(case["tasks"])
    for key, insts in theirs.items():
        _same_requests(_ours_for(key, tasks), insts, f"{path}: {key}")
    ours_groups = {g.name: g.subtasks for g in header.groups}
    for g, members in case["groups"].items():
        assert [m.rsplit("::", 1)[-1] for m in members] == [m.rsplit("::", 1)[-1] for m in ours_groups[g]]


def test_plus_task_takes_a_path(data: Path) -> None:
    """``+task=GROUP::CHILD`` is ``run.tasks=[GROUP::CHILD]``."""
    common = (f"run.data_dir={data}", "run.limit=2", f"run.include_path={YAMLS}")
    a = compiler.compile_plan(["+task=arc_paths::both", *common])[0]
    b = compiler.compile_plan(["run.tasks=[arc_paths::both]", *common])[0]
    assert a.plan_hash == b.plan_hash and [g.name for g in a.groups] == ["arc_paths::both"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "mmlu::humanities",
            "not found in group 'mmlu'; its children: mmlu_stem, mmlu_other, mmlu_social_sciences, mmlu_humanities",
        ),  # fmt: skip
        ("mmlu::mmlu_humanities", "'mmlu::mmlu_humanities' not found in group 'mmlu'"),
        (
            "arc_paths::hard",
            "'arc_paths::hard' not found in group 'arc_paths'; its children: arc_paths::easy, arc_paths::both",
        ),  # fmt: skip
        ("arc_easy::x", "root 'arc_easy' of path 'arc_easy::x' is not a group"),
    ],
)
def test_what_lm_eval_05_does_not_find_is_refused_in_one_line(path: str, message: str, data: Path) -> None:
    assert "KeyError" in golden()[f"path:{path}"]["error"]
    with pytest.raises(CompileError) as e:
        _compile(path, data)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_overlapping_groups_two_tasks_where_they_differ_one_where_the_same(data: Path, tmp_path: Path) -> None:
    case = golden()["overlap_groups"]
    assert case["tasks"] == {
        "overlap_a::arc_easy": 0,
        "overlap_a::piqa": 1,
        "overlap_b::arc_easy": 2,
        "overlap_b::piqa": 1,
    }
    header, ours = _compile("overlap_a,overlap_b", data)
    shots = {t.name: (t.num_fewshot, t.groups) for t in header.tasks}
    assert shots == {
        "overlap_a::arc_easy": (0, ["overlap_a"]),
        "overlap_b::arc_easy": (2, ["overlap_b"]),
        "piqa": (1, ["overlap_a", "overlap_b"]),
    }
    assert {g.name: g.subtasks for g in header.groups} == {
        "overlap_a": ["overlap_a::arc_easy", "piqa"],
        "overlap_b": ["overlap_b::arc_easy", "piqa"],
    }
    tasks: dict[str, list[dict[str, Any]]] = {}
    for d in ours:
        tasks.setdefault(d["task"], []).append(d)
    theirs: dict[str, list[dict[str, Any]]] = {}
    for i in case["instances"]:
        theirs.setdefault(i["key"], []).append(i)
    strip = [[{k: v for k, v in i.items() if k != "key"} for i in theirs[f"overlap_{g}::piqa"]] for g in "ab"]
    assert strip[0] == strip[1]  # identical Instances in lm-eval 0.5: one task here
    for key, insts in theirs.items():
        _same_requests(_ours_for(key, tasks), insts, key)
    assert tasks["overlap_a::arc_easy"] != tasks["overlap_b::arc_easy"]  # 0 and 2 shots

    from lmeval.executor import execute
    from lmeval.scorer import score

    plan = compiler.compile_to_file(
        ["run.tasks=[overlap_a,overlap_b]", f"run.data_dir={data}", "run.limit=8", f"run.include_path={YAMLS}"],
        out=str(tmp_path / "plan.msgpack"),
    )
    out = tmp_path / "run"
    execute(str(plan), out=str(out), overrides=["model.backend=fake"], progress=False)
    score(str(out))
    res = json.loads((out / "results.json").read_text())["results"]
    a, b, p = (res[t]["acc,none"] for t in ("overlap_a::arc_easy", "overlap_b::arc_easy", "piqa"))
    assert res["overlap_a"]["acc,none"] == pytest.approx((8 * a + 8 * p) / 16)
    assert res["overlap_b"]["acc,none"] == pytest.approx((8 * b + 8 * p) / 16)


def test_a_third_group_names_its_own_config_and_shares_an_equal_one(data: Path) -> None:
    header, _ = _compile("overlap_a,overlap_b,overlap_c", data)
    shots = {t.name: (t.num_fewshot, t.groups) for t in header.tasks}
    assert shots["overlap_c::arc_easy"] == (3, ["overlap_c"])
    assert shots["overlap_a::arc_easy"] == (0, ["overlap_a", "overlap_c::overlap_c_again", "overlap_c"])
    groups = {g.name: g.subtasks for g in header.groups}
    assert groups["overlap_c"] == ["overlap_c::arc_easy", "overlap_c::overlap_c_again"]
    assert groups["overlap_c::overlap_c_again"] == ["overlap_a::arc_easy"]
