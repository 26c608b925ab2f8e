"""lmeval.diff on minimal pairs of plans built from real MMLU rows: one change class per test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmeval.diff import cause_of_path, dict_changes, diff_plans, render_text, visible_inline, visible_line
from lmeval.plans.errors import PlanError, UserError
from lmeval.plans.plan import VERSION
from tests.diff.diff_builders import build, spec, with_

ANAT = spec()
ASTRO = spec("mmlu_astronomy", "astronomy")
VIRO = spec("mmlu_virology", "virology")
BASE = [ANAT, ASTRO, VIRO]


def pair(tmp_path: Path, new: list, old: list | None = None, **kw: Any) -> tuple[Path, Path]:
    a = build(tmp_path / "old.msgpack", old or BASE, **kw.pop("old_kw", {}))
    b = build(tmp_path / "new.msgpack", new, **kw)
    return a, b


def only_task(report, name: str):
    assert [t.name for t in report.tasks] == [name]
    return report.tasks[0]


def causes(td) -> dict[str, tuple[int, int]]:
    return {c.cause: (c.docs, c.instances) for c in td.causes}


def test_identical_plans_one_line(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", BASE)
    b = build(tmp_path / "b.msgpack", BASE)
    r = diff_plans(a, b)
    assert r.identical and r.tasks == [] and r.tasks_identical == 3
    assert render_text(r) == r.summary() and "\n" not in render_text(r)
    assert r.summary().startswith("identical: 3 tasks, 18 docs, 72 instances")


def test_description_change(tmp_path: Path) -> None:
    new_desc = ANAT.desc().replace("anatomy.", "anatomy:")
    r = diff_plans(*pair(tmp_path, [with_(ANAT, description=new_desc), ASTRO, VIRO]))
    td = only_task(r, "mmlu_anatomy")
    assert causes(td) == {"description": (6, 24)}
    assert td.docs_changed == 6 and td.instances_changed == 24 and td.to_execute == 24
    assert [c.path for c in td.cause("description").config] == ["config.description"]
    assert r.tasks_identical == 2


def test_fewshot_seed_change_lists_example_ids(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, with_(ASTRO, seed=7), VIRO]))
    td = only_task(r, "mmlu_astronomy")
    c = td.cause("fewshot")
    assert c is not None and set(causes(td)) == {"fewshot"}
    assert c.docs == td.docs_changed > 0 and c.instances == 4 * c.docs
    ex = c.examples[0]
    assert ex["old"] != ex["new"] and len(ex["new"]) == 2
    assert [x.path for x in c.config] == ["config.fewshot_config.random_seed"]


def test_fewshot_delimiter_change(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(ANAT, fewshot_delimiter="\n\n\n"), ASTRO, VIRO]))
    td = only_task(r, "mmlu_anatomy")
    assert causes(td) == {"delimiters": (6, 24)}


def test_target_delimiter_change_moves_continuations(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, with_(ASTRO, target_delimiter=""), VIRO]), show=1)
    td = only_task(r, "mmlu_astronomy")
    assert set(causes(td)) == {"delimiters"}
    assert causes(td)["delimiters"] == (6, 24)
    assert "continuation: '␣A' → 'A'" in r.prompts[0].diff


def test_template_change(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, ASTRO, with_(VIRO, template="Q: {question}\n{options}\nAnswer:")]))
    td = only_task(r, "mmlu_virology")
    assert causes(td) == {"template": (6, 24)}


def test_doc_text_change(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(ANAT, edit_doc=3), ASTRO, VIRO]))
    td = only_task(r, "mmlu_anatomy")
    assert causes(td) == {"doc": (1, 4)}
    assert td.docs_changed == 1 and td.cause("doc").examples == [{"doc_id": 3, "fields": ["question"]}]


def test_choices_change(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(ANAT, edit_choices=2), ASTRO, VIRO]))
    td = only_task(r, "mmlu_anatomy")
    # the choice text is part of the doc and of the rendered question
    assert set(causes(td)) == {"doc"} and td.docs_changed == 1


def test_target_change(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, ASTRO, with_(VIRO, edit_target=0)]))
    td = only_task(r, "mmlu_virology")
    assert causes(td)["target"] == (1, 0)
    assert td.instances_changed == 0 and td.to_execute == 0


def test_generation_kwargs_change(tmp_path: Path) -> None:
    g = with_(ANAT, output_type="generate_until")
    r = diff_plans(*pair(tmp_path, [with_(g, until=("\n\n", "Question:"))], old=[g]), show=1)
    td = only_task(r, "mmlu_anatomy")
    assert causes(td)["generation_kwargs"] == (6, 6)
    assert "(context unchanged)" in r.prompts[0].diff and "generation_kwargs.until" in r.prompts[0].diff


def test_token_ids_only(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(s, id_shift=1) for s in BASE], tokenizer_hash="bytes-v2"), show=1)
    assert [c.path for c in r.model] == ["tokenizer_hash"]
    assert {t.name for t in r.tasks} == {s.name for s in BASE}
    for td in r.tasks:
        assert causes(td) == {"token_ids": (6, 24)}
    assert r.prompts[0].kind == "token_ids" and "first difference at position 0" in r.prompts[0].diff


def test_metric_change_is_scoring_only(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, with_(ASTRO, metric="acc_norm"), VIRO]))
    td = only_task(r, "mmlu_astronomy")
    assert td.records_identical and td.scoring_only and td.to_execute == 0
    assert set(causes(td)) == {"scoring"} and causes(td)["scoring"] == (0, 0)
    assert "scoring only" in render_text(r)


def test_filter_change_is_scoring_only(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, ASTRO, with_(VIRO, filters=("take_first",))]))
    td = only_task(r, "mmlu_virology")
    assert td.scoring_only and set(causes(td)) == {"scoring"}


def test_config_only_change_keeps_records(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(ANAT, extra={"version_note": "x"}), ASTRO, VIRO]))
    td = only_task(r, "mmlu_anatomy")
    assert td.records_identical and not td.scoring_only and set(causes(td)) == {"config"}


def test_system_instruction_from_run_config(tmp_path: Path) -> None:
    desc = "You are careful.\n\n" + ANAT.desc()
    r = diff_plans(
        *pair(tmp_path, [with_(ANAT, description=desc)], old=[ANAT], run={"system_instruction": "You are careful."})
    )
    assert [c.path for c in r.config] == ["run.system_instruction"]
    td = only_task(r, "mmlu_anatomy")
    # the task's own description changed too, so that is what explains the prompt text
    assert "description" in causes(td)


def test_run_level_cause_when_task_config_is_unchanged(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT])
    b = build(
        tmp_path / "b.msgpack",
        [with_(ANAT, edit_doc=None, template="{question}\n{options}\nAnswer:")],
        run={"system_instruction": "Be brief."},
    )
    r = diff_plans(a, b)
    assert r.identical is False and [c.path for c in r.config] == ["run.system_instruction"]
    assert r.tasks == []  # prompts did not move: the task hash is the same


def test_docs_added_with_higher_limit(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(ANAT, limit=8), ASTRO, VIRO]), show=3)
    td = only_task(r, "mmlu_anatomy")
    assert (td.docs_added, td.instances_added, td.to_execute, td.docs_changed) == (2, 8, 8, 0)
    assert [p.kind for p in r.prompts] == ["added", "added"]


def test_task_added_and_removed(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, ASTRO, spec("mmlu_nutrition", "nutrition")]))
    assert [(t.name, t.status) for t in r.tasks] == [("mmlu_nutrition", "added"), ("mmlu_virology", "removed")]
    assert r.tasks[0].to_execute == 24


def test_unordered_docs_fall_back_to_dict_join(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT])
    b = build(tmp_path / "b.msgpack", [with_(ANAT, edit_doc=4)], reverse_docs=True)
    r = diff_plans(a, b)
    td = only_task(r, "mmlu_anatomy")
    assert causes(td) == {"doc": (1, 4)} and td.docs_added == td.docs_removed == 0


def test_show_and_task_filter(tmp_path: Path) -> None:
    a, b = pair(tmp_path, [with_(ANAT, description="Anatomy.\n\n"), with_(ASTRO, seed=3), VIRO])
    r = diff_plans(a, b, show=2)
    assert len(r.prompts) == 2 and r.prompts_total > 2
    r = diff_plans(a, b, show=100, task="mmlu_astronomy")
    assert {p.task for p in r.prompts} == {"mmlu_astronomy"} and [t.name for t in r.tasks] == ["mmlu_astronomy"]
    r = diff_plans(a, b, show=0, task="mmlu")  # a group name
    assert len(r.tasks) == 2 and r.prompts == []
    with pytest.raises(UserError, match="no such task"):
        diff_plans(a, b, task="nope")


def test_prompt_diff_shows_whitespace(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [with_(ANAT, template="{question}\n{options}\nAnswer: ")]), show=1)
    d = r.prompts[0].diff
    assert "+Answer:␣" in d and "-Answer:" in d and d.startswith("--- ")


def test_json_round_trip(tmp_path: Path) -> None:
    r = diff_plans(*pair(tmp_path, [ANAT, with_(ASTRO, seed=5), VIRO]))
    d = json.loads(r.to_json())
    assert d["identical"] is False and d["tasks"][0]["causes"][0]["cause"] == "fewshot"
    assert d["tasks"][0]["causes"][0]["label"] == "few-shot selection"
    assert d["summary"] == r.summary()


def test_visible_whitespace() -> None:
    assert visible_line("a\tb  \n") == "a→b␣␣↵"
    assert visible_line("x\r\n") == "x␍↵"
    assert visible_inline(" A") == "␣A" and visible_inline("  ") == "␣␣" and visible_inline("a b\n") == "a b↵"


def test_dict_changes_and_key_causes() -> None:
    old = {"run": {"num_fewshot": 5, "x": [1, 2]}, "m": [{"metric": "acc"}], "gone": 1}
    new = {"run": {"num_fewshot": 0, "x": [1, 3]}, "m": [{"metric": "acc_norm"}], "new": True}
    got = [(c.path, c.kind) for c in dict_changes(old, new)]
    assert got == [
        ("gone", "removed"),
        ("m[0].metric", "changed"),
        ("new", "added"),
        ("run.num_fewshot", "changed"),
        ("run.x", "changed"),
    ]
    assert dict_changes({"a": 1}, {"a": True})  # 1 and True are different config values
    assert cause_of_path("config.fewshot_config.split") == "fewshot"
    assert cause_of_path("metric_list[0].aggregation") == "scoring"
    assert cause_of_path("config.generation_kwargs.until") == "generation_kwargs"
    assert cause_of_path("config.target_delimiter") == "delimiters"
    assert cause_of_path("config.something_else") == "config"


# --- bad input -----------------------------------------------------------------------------------------


def test_not_a_plan(tmp_path: Path) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT])
    txt = tmp_path / "notes.txt"
    txt.write_text("hello\n")
    with pytest.raises(PlanError, match="not an lmeval plan"):
        diff_plans(txt, a)
    empty = tmp_path / "empty.msgpack"
    empty.write_bytes(b"")
    with pytest.raises(PlanError, match="empty or truncated"):
        diff_plans(a, empty)
    with pytest.raises(PlanError, match="cannot open"):
        diff_plans(a, tmp_path / "missing.msgpack")


def test_different_format_versions_are_explained(tmp_path: Path) -> None:
    import msgpack

    a = build(tmp_path / "a.msgpack", [ANAT])
    raw = a.read_bytes()
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(raw)
    header = unpacker.unpack()
    rest = raw[unpacker.tell() :]
    other = VERSION + 1
    header["version"] = other
    v2 = tmp_path / "other.msgpack"
    v2.write_bytes(msgpack.packb(header) + rest)
    with pytest.raises(PlanError) as e:
        diff_plans(a, v2)
    msg = str(e.value)
    assert "different format versions" in msg and f"version {VERSION}" in msg and f"version {other}" in msg
    assert "recompile" in msg and str(v2) in msg and "\n" not in msg


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_truncated_and_modified_plans(tmp_path: Path, codec: str) -> None:
    a = build(tmp_path / "a.msgpack", [ANAT, ASTRO], codec=codec)
    raw = a.read_bytes()
    cut = tmp_path / "cut.msgpack"
    cut.write_bytes(raw[:-100])
    with pytest.raises(PlanError, match="truncated"):
        diff_plans(a, cut)
    cut.write_bytes(raw[:200])
    with pytest.raises(PlanError, match="truncated"):
        diff_plans(cut, a)
    edited = tmp_path / "edited.msgpack"
    if codec == "none":
        i = raw.rindex(b"Answer:")
        edited.write_bytes(raw[:i] + b"answer:" + raw[i + 7 :])
        with pytest.raises(PlanError, match="hash mismatch"):
            diff_plans(a, edited)
    else:  # a flipped byte in a compressed frame: zstd's frame checksum (or its decoder) refuses it
        i = len(raw) - 300
        edited.write_bytes(raw[:i] + bytes([raw[i] ^ 0xFF]) + raw[i + 1 :])
        with pytest.raises(PlanError, match="corrupt"):
            diff_plans(a, edited)
    longer = tmp_path / "longer.msgpack"
    longer.write_bytes(raw + b"\x00")
    with pytest.raises(PlanError, match="trailing bytes"):
        diff_plans(a, longer)
