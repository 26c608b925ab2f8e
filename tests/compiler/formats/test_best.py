"""``NAME@best`` (#38): the cloze and lettered tasks exactly as selected alone, plus a group over the two that
scores the better of them (scorer/groups/best.py); refused as ``run.format``; end to end on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError
from lmeval.plans import InstanceRecord


def _compiled(*overrides: str) -> tuple[object, dict[str, tuple[str, str]], dict[str, object]]:
    header, records = compiler.compile_plan(list(overrides))
    reqs = {r.instance_id: (r.task, r.request_hash) for r in records if isinstance(r, InstanceRecord)}
    return header, reqs, {t.name: t for t in header.tasks}


def test_best_is_the_two_formats_as_alone_and_a_group(data: Path) -> None:
    common = (f"run.data_dir={data}", "run.limit=4")
    best, best_reqs, best_tasks = _compiled("+task=arc_easy@best", *common)
    _, cf_reqs, cf_tasks = _compiled("+task=arc_easy@cf", *common)
    _, mcf_reqs, mcf_tasks = _compiled("+task=arc_easy@mcf", *common)
    assert sorted(best_tasks) == ["arc_easy@cf", "arc_easy@mcf"]
    assert best_reqs == {**cf_reqs, **mcf_reqs} and len(best_reqs) == 4 * 4 * 3  # cf: each choice and its "Answer:"
    for name, alone in {**cf_tasks, **mcf_tasks}.items():
        assert best_tasks[name].to_dict() == alone.to_dict()  # type: ignore[attr-defined]
    (g,) = best.groups  # type: ignore[attr-defined]
    assert (g.name, g.subtasks) == ("arc_easy@best", ["arc_easy@cf", "arc_easy@mcf"])
    assert g.aggregate_metric_list == [{"metric": "best", "aggregation": "best", "filter_list": ["none"]}]
    spelt = compiler.compile_plan(["run.tasks=[arc_easy@best]", *common])[0]
    assert spelt.plan_hash == best.plan_hash  # type: ignore[attr-defined]


def test_a_group_at_best_holds_the_two_formatted_groups(data: Path) -> None:
    header, _, tasks = _compiled("run.tasks=[mmlu@best]", f"run.data_dir={data}", "run.limit=1")
    assert len(tasks) == 2 * 57
    groups = {g.name: g for g in header.groups}  # type: ignore[attr-defined]
    assert groups["mmlu@best"].subtasks == ["mmlu@cf", "mmlu@mcf"]
    assert {"mmlu@cf", "mmlu@mcf", "mmlu_stem@cf", "mmlu_stem@mcf"} <= set(groups)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["run.format=best", "+task=arc_easy"], "run.format"),
        (["+task=gsm8k@best"], "prompt format 'cf' applies to multiple_choice tasks"),
        (["run.tasks=[arc_easy@best,arc_easy@cf]"], "task 'arc_easy@cf' is selected twice"),
    ],
)
def test_best_refusals(overrides: list[str], message: str, data: Path) -> None:
    with pytest.raises(CompileError) as e:
        compiler.compile_plan([*overrides, f"run.data_dir={data}", "run.limit=2"])
    assert message in str(e.value) and "\n" not in str(e.value)


def test_best_end_to_end_on_the_tiny_model(tmp_path: Path, data: Path) -> None:
    from lmeval.common.tinymodel import ensure_tiny_model
    from lmeval.executor import execute
    from lmeval.scorer import score

    plan = compiler.compile_to_file(
        ["+task=arc_easy@best", f"run.data_dir={data}", "run.limit=5"], out=str(tmp_path / "best.msgpack")
    )
    out = tmp_path / "run"
    execute(
        str(plan), out=str(out), overrides=["model.backend=hf", f"model.path={ensure_tiny_model()}"], progress=False
    )
    score(str(out))
    doc = json.loads((out / "results.json").read_text())
    res, cf, mcf = (doc["results"][n] for n in ("arc_easy@best", "arc_easy@cf", "arc_easy@mcf"))
    expect = max((cf["acc_norm,none"], "cf"), (mcf["acc,none"], "mcf"), key=lambda x: x[0])
    if cf["acc_norm,none"] == mcf["acc,none"]:
        expect = (cf["acc_norm,none"], "cf")  # a tie: cf, the first member
    assert (res["best,none"], res["best_format"]) == expect
    chosen = cf if expect[1] == "cf" else mcf
    key = "acc_norm" if expect[1] == "cf" else "acc"
    assert res["best_metric"] == f"{key},none" and res["best_stderr,none"] == chosen[f"{key}_stderr,none"]
    assert doc["group_subtasks"]["arc_easy@best"] == ["arc_easy@cf", "arc_easy@mcf"]
    assert "arc_easy@best" in doc["groups"]
