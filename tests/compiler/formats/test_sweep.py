"""Sensitivity sweeps (#38): ``NAME@sweep`` with ``run.sweep`` compiles every variant (format x label style x
few-shot seed) as a task of its own, named by plans/vocab/promptformats.py's one rule, plus a group reporting their
spread; the default variant is the plain ``NAME@FMT`` task byte for byte; bad values are refused in one line;
end to end on the tiny model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError
from lmeval.plans import DocRecord, InstanceRecord, Variant, VariantError, parse_variant

SWEEP_3X3X3 = "+run.sweep={formats:[cf,mcf,gen],labels:[letters,parens,numbers],seeds:[1234,1,2]}"


def _compiled(*overrides: str) -> tuple[object, list[object]]:
    header, records = compiler.compile_plan(list(overrides))
    return header, records


def _by_task(records: list[object], kind: type) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for r in records:
        if isinstance(r, kind):
            out.setdefault(r.task, []).append(r)  # type: ignore[attr-defined]
    return out


def test_three_formats_by_three_label_styles_by_three_seeds_are_21_tasks(data: Path) -> None:
    common = (f"run.data_dir={data}", "run.limit=3", "run.num_fewshot=3")
    header, records = _compiled("+task=arc_easy@sweep", SWEEP_3X3X3, *common)
    names = [t.name for t in header.tasks]  # type: ignore[attr-defined]
    seeds = ["", "+seed1", "+seed2"]
    want = [f"arc_easy@cf{s}" for s in seeds]
    want += [f"arc_easy@{f}{lab}{s}" for f in ("mcf", "gen") for lab in ("", "+parens", "+numbers") for s in seeds]
    assert sorted(names) == sorted(want) and len(names) == 21
    (g,) = header.groups  # type: ignore[attr-defined]
    assert g.name == "arc_easy@sweep" and g.subtasks == want[:3] + [w for w in want[3:]]
    assert g.aggregate_metric_list == [{"metric": "spread", "aggregation": "spread", "filter_list": ["none"]}]
    tasks = {t.name: t for t in header.tasks}  # type: ignore[attr-defined]
    # the default variants are the plain tasks, record for record (so their requests are shared)
    for fmt in ("cf", "mcf", "gen"):
        alone_header, alone = _compiled(f"+task=arc_easy@{fmt}", *common)
        (t,) = alone_header.tasks  # type: ignore[attr-defined]
        assert tasks[f"arc_easy@{fmt}"].to_dict() == t.to_dict()
        mine = [r.to_dict() for r in _by_task(records, InstanceRecord)[f"arc_easy@{fmt}"]]  # type: ignore[attr-defined]
        assert mine == [r.to_dict() for r in alone if isinstance(r, InstanceRecord)]
    fmt_rec = tasks["arc_easy@gen+numbers+seed2"].config["format"]
    assert (fmt_rec["name"], fmt_rec["labels"], fmt_rec["seed"]) == ("gen", "numbers", 2)
    assert "seed" not in tasks["arc_easy@mcf+parens"].config["format"]


def test_label_styles_and_seeds_really_change_the_prompts(data: Path) -> None:
    common = (f"run.data_dir={data}", "run.limit=3", "run.num_fewshot=3")
    _, records = _compiled("+task=arc_easy@sweep", SWEEP_3X3X3, *common)
    inst = _by_task(records, InstanceRecord)
    docs = _by_task(records, DocRecord)
    first = {name: rs[0].context for name, rs in inst.items()}  # type: ignore[attr-defined]
    assert "\n A. " in first["arc_easy@mcf"] and "\n (A) " in first["arc_easy@mcf+parens"]
    assert "\n 1. " in first["arc_easy@mcf+numbers"] and "\n (A) " in first["arc_easy@gen+parens"]
    assert [r.continuation for r in inst["arc_easy@mcf+numbers"][:4]] == [" 1", " 2", " 3", " 4"]  # type: ignore[attr-defined]
    ids = {name: [d.fewshot_ids for d in ds] for name, ds in docs.items()}  # type: ignore[attr-defined]
    assert ids["arc_easy@mcf"] != ids["arc_easy@mcf+seed1"] != ids["arc_easy@mcf+seed2"] != ids["arc_easy@mcf"]
    assert ids["arc_easy@mcf+seed1"] == ids["arc_easy@cf+seed1"] == ids["arc_easy@gen+parens+seed1"]
    # a variant's seed draws the examples run.fewshot_random_seed would
    _, alone = _compiled("+task=arc_easy@mcf", "run.fewshot_random_seed=1", *common)
    assert [r.context for r in alone if isinstance(r, InstanceRecord)] == [
        r.context  # type: ignore[attr-defined]
        for r in inst["arc_easy@mcf+seed1"]
    ]


def test_one_variant_is_selectable_by_name(data: Path) -> None:
    common = (f"run.data_dir={data}", "run.limit=2", "run.num_fewshot=2")
    one, _ = _compiled("+task=arc_easy@mcf+parens+seed1", *common)
    swept, _ = _compiled("+task=arc_easy@sweep", SWEEP_3X3X3, *common)
    (t,) = one.tasks  # type: ignore[attr-defined]
    assert t.to_dict() == {x.name: x for x in swept.tasks}["arc_easy@mcf+parens+seed1"].to_dict()  # type: ignore[attr-defined]


def test_a_group_sweeps_as_formatted_groups(data: Path) -> None:
    header, _ = _compiled(
        "run.tasks=[mmlu@sweep]",
        "+run.sweep={formats:[mcf],labels:[letters,parens]}",
        f"run.data_dir={data}",
        "run.limit=1",
    )
    groups = {g.name: g for g in header.groups}  # type: ignore[attr-defined]
    assert groups["mmlu@sweep"].subtasks == ["mmlu@mcf", "mmlu@mcf+parens"]
    assert {"mmlu_stem@mcf+parens", "mmlu_humanities@mcf"} <= set(groups)
    assert len(header.tasks) == 2 * 57  # type: ignore[attr-defined]


def test_the_default_sweep_is_the_three_formats(data: Path) -> None:
    header, _ = _compiled("+task=arc_easy@sweep", f"run.data_dir={data}", "run.limit=1")
    assert [t.name for t in header.tasks] == ["arc_easy@cf", "arc_easy@gen", "arc_easy@mcf"]  # type: ignore[attr-defined]


def test_variant_names_are_one_canonical_spelling() -> None:
    assert parse_variant("mcf+parens+seed1") == Variant("mcf", "parens", 1)
    assert parse_variant("cf+seed0") == Variant("cf", None, 0) and parse_variant("gen") == Variant("gen")
    assert Variant("gen", "numbers", 2).suffix() == "gen+numbers+seed2"
    for bad in ("mcf+letters", "cf+parens", "mcf+seed01", "mcf+seed1+parens", "mcf+", "xyz", "mcf+parens+numbers"):
        with pytest.raises(VariantError):
            parse_variant(bad)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["+run.sweep={formats:[cf,xf]}"], "run.sweep.formats: must list only cf, mcf or gen, got 'xf'"),
        (["+run.sweep={labels:[parens,braces]}"], "run.sweep.labels: must list only letters, parens or numbers"),
        (["+run.sweep={seeds:[1,one]}"], "run.sweep.seeds: must list only non-negative integers, got 'one'"),
        (["+run.sweep={seeds:[1,1]}"], "run.sweep.seeds: lists 1 twice"),
        (["+run.sweep={seeds:[]}"], "run.sweep.seeds: must be a non-empty list"),
        (["+run.sweep={shots:[1]}"], "run.sweep.shots: unknown key"),
        (["+run.sweep=3"], "run.sweep: must be a mapping"),
        (["+task=arc_easy@mcf"], "run.sweep: no task is selected as NAME@sweep"),
        (["run.tasks=[arc_easy@mcf+letters]"], "letters is the default label style; leave it out"),
        (["run.tasks=[arc_easy@cf+parens]"], "the cloze format has no labels"),
        (["run.tasks=[arc_easy@mcf+seed1+parens]"], "a variant is FORMAT[+LABELS][+seedN]"),
        (["run.tasks=[arc_easy@mcf+braces]"], "unknown label style 'braces'"),
        (["run.format=sweep", "+task=arc_easy"], "run.format"),
    ],
)
def test_sweep_refusals(overrides: list[str], message: str, data: Path) -> None:
    if overrides[0].startswith("+run.sweep") and not any("task" in o for o in overrides):
        overrides = [*overrides, "+task=arc_easy@sweep"]
    if overrides == ["+task=arc_easy@mcf"]:
        overrides = ["+run.sweep={seeds:[1]}", *overrides]
    with pytest.raises(CompileError) as e:
        compiler.compile_plan([*overrides, f"run.data_dir={data}", "run.limit=2"])
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_sweep_end_to_end_on_the_tiny_model(tmp_path: Path, data: Path) -> None:
    from lmeval.common.tinymodel import ensure_tiny_model
    from lmeval.executor import execute
    from lmeval.scorer import score

    sweep = "+run.sweep={formats:[cf,mcf],labels:[letters,parens],seeds:[1234,7]}"
    plan = compiler.compile_to_file(
        ["+task=arc_easy@sweep", sweep, f"run.data_dir={data}", "run.limit=5", "run.num_fewshot=1"],
        out=str(tmp_path / "sweep.msgpack"),
    )
    out = tmp_path / "run"
    execute(
        str(plan), out=str(out), overrides=["model.backend=hf", f"model.path={ensure_tiny_model()}"], progress=False
    )
    score(str(out))
    doc = json.loads((out / "results.json").read_text())
    members = doc["group_subtasks"]["arc_easy@sweep"]
    assert members == [
        "arc_easy@cf",
        "arc_easy@cf+seed7",
        "arc_easy@mcf",
        "arc_easy@mcf+seed7",
        "arc_easy@mcf+parens",
        "arc_easy@mcf+parens+seed7",
    ]
    keys = {m: doc["configs"][m]["format"]["metric"] for m in members}
    assert keys["arc_easy@cf"] == "acc_norm,none" and keys["arc_easy@mcf+parens"] == "acc,none"
    values = [doc["results"][m][keys[m]] for m in members]
    res = doc["results"]["arc_easy@sweep"]
    mean = sum(values) / 6
    assert res["spread_min,none"] == min(values) and res["spread_max,none"] == max(values)
    assert res["spread_range,none"] == max(values) - min(values) and res["spread_n"] == 6
    assert math.isclose(res["spread_mean,none"], mean)
    assert math.isclose(res["spread_std,none"], math.sqrt(sum((v - mean) ** 2 for v in values) / 5))
    assert res["spread_argmin"] == members[values.index(min(values))]
    assert res["spread_argmax"] == members[values.index(max(values))]
