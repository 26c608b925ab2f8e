"""Selecting prompt formats (#38): ``+task=NAME@FMT``, ``run.tasks=[NAME@FMT]``, ``run.format=FMT`` and
their refusals; the task as written keeps its plan hash; a group in a format aggregates the format's metric."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler import CompileError


def _plan(*overrides: str) -> tuple[str, list[str], dict[str, object]]:
    header, _ = compiler.compile_plan(list(overrides))
    return header.plan_hash, [t.name for t in header.tasks], {g.name: g for g in header.groups}


def test_both_spellings_give_one_plan(data: Path) -> None:
    common = (f"run.data_dir={data}", "run.limit=3")
    a = _plan("+task=arc_easy@mcf", *common)
    b = _plan("run.tasks=[arc_easy@mcf]", *common)
    assert a[1] == b[1] == ["arc_easy@mcf"] and a[0] == b[0]


def test_no_suffix_keeps_its_hash_and_run_format_unset_is_absent(data: Path) -> None:
    header, _ = compiler.compile_plan(["+task=arc_easy", f"run.data_dir={data}", "run.limit=3"])
    assert "format" not in header.config["run"] and "format" not in header.tasks[0].config
    with_null = compiler.compile_plan(["+task=arc_easy", f"run.data_dir={data}", "run.limit=3", "run.format=null"])
    assert with_null[0].plan_hash == header.plan_hash


def test_several_formats_of_one_task_in_one_plan(data: Path) -> None:
    _, names, _ = _plan(
        "run.tasks=[arc_easy@cf,arc_easy@mcf,arc_easy@gen,arc_easy]", f"run.data_dir={data}", "run.limit=2"
    )
    assert names == ["arc_easy", "arc_easy@cf", "arc_easy@gen", "arc_easy@mcf"]


def test_run_format_applies_to_multiple_choice_tasks_only(data: Path) -> None:
    _, names, _ = _plan("run.tasks=[arc_easy,gsm8k]", "run.format=mcf", f"run.data_dir={data}", "run.limit=2")
    assert names == ["arc_easy@mcf", "gsm8k"]


def test_a_group_in_a_format(data: Path) -> None:
    _, names, groups = _plan("run.tasks=[mmlu@gen]", f"run.data_dir={data}", "run.limit=1")
    assert len(names) == 57 and all(n.endswith("@gen") for n in names)
    assert set(groups) == {
        f"{g}@gen" for g in ("mmlu", "mmlu_stem", "mmlu_other", "mmlu_social_sciences", "mmlu_humanities")
    }
    top = groups["mmlu@gen"]
    assert [a["metric"] for a in top.aggregate_metric_list] == ["exact_match"]  # type: ignore[attr-defined]
    assert [a["filter_list"] for a in top.aggregate_metric_list] == [["letter"]]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["+task=arc_easy@xyz"], "unknown prompt format 'xyz'; expected one of cf, mcf, gen"),
        (["+task=gsm8k@mcf"], "prompt format 'mcf' applies to multiple_choice tasks (this one is 'generate_until')"),
        (["run.format=letters", "+task=arc_easy"], "run.format"),
        (["+task=no_such_task@mcf"], "unknown task or group 'no_such_task'"),
    ],
)
def test_refusals_name_what_is_wrong(overrides: list[str], message: str, data: Path) -> None:
    with pytest.raises(CompileError) as e:
        compiler.compile_plan([*overrides, f"run.data_dir={data}", "run.limit=2"])
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_task_whose_choices_are_a_function_is_refused_in_one_line(tmp_path: Path, data: Path) -> None:
    (tmp_path / "fnchoice.yaml").write_text(
        "task: fnchoice\ndataset_path: allenai/ai2_arc\ndataset_name: ARC-Easy\noutput_type: multiple_choice\n"
        "test_split: test\ndoc_to_text: 'Q: {{question}}\\nA:'\ndoc_to_target: 0\n"
        "doc_to_choice: !function utils.choices\n"
    )
    (tmp_path / "utils.py").write_text("def choices(doc):\n    return doc['choices']['text']\n")
    with pytest.raises(CompileError) as e:
        compiler.compile_plan(["run.tasks=[fnchoice@mcf]", f"run.include_path={tmp_path}", f"run.data_dir={data}"])
    msg = str(e.value)
    assert "fnchoice" in msg and "doc_to_choice" in msg and "a Python function (utils.choices)" in msg


def test_a_task_without_an_adapter_gets_one_from_its_fields(tmp_path: Path, data: Path) -> None:
    """An lm-eval-style task of the user's: question, choices and gold read from its own templates."""
    (tmp_path / "my_arc.yaml").write_text(
        "task: my_arc\ndataset_path: allenai/ai2_arc\ndataset_name: ARC-Easy\noutput_type: multiple_choice\n"
        'test_split: test\ndoc_to_text: "Question: {{question}}\\nAnswer:"\n'
        "doc_to_target: '{{choices.label.index(answerKey)}}'\ndoc_to_choice: '{{choices.text}}'\n"
    )
    ours = compiler.compile_plan(
        ["run.tasks=[my_arc@mcf]", f"run.include_path={tmp_path}", f"run.data_dir={data}", "run.limit=3"]
    )
    shipped = compiler.compile_plan(["run.tasks=[arc_easy@mcf]", f"run.data_dir={data}", "run.limit=3"])
    contexts = [getattr(r, "context", None) for r in ours[1]]
    assert contexts == [getattr(r, "context", None) for r in shipped[1]] and any(contexts)
