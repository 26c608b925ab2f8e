"""Where lmeval is stricter than lm-eval (docs "lm-eval compatibility"): a multiple-choice target outside its
choices is a compile error, where lm-eval warns and scores 0 (its ``process_results`` maps an index >= the
number of choices, or a string that is not a choice, to -100; and -1 would silently pick the last choice's
``is_greedy`` for exact_match). Every boundary of the index range, both sides, and string targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmeval.plans import read_plan

TASK = """task: {name}
dataset_path: json
dataset_kwargs: {{data_files: {{test: {data}}}}}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{q}}}}"
doc_to_target: t
doc_to_choice: c
"""
CHOICES = ["alpha", "beta", "gamma"]


def _compile(tmp_path: Path, cli, targets: list[object]) -> tuple[int, str, Path]:  # type: ignore[no-untyped-def]
    """A three-choice task whose doc 1 has the given target (doc 0 is always valid)."""
    tasks = tmp_path / "tasks"
    tasks.mkdir(exist_ok=True)
    data = tmp_path / "data.jsonl"
    docs = [{"q": "first", "c": CHOICES, "t": 0}]
    docs += [{"q": f"q{i}", "c": CHOICES, "t": t} for i, t in enumerate(targets)]
    data.write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tasks / "mc.yaml").write_text(TASK.format(name="mc", data=data))
    out = tmp_path / "plan.msgpack"
    out.unlink(missing_ok=True)
    rc, _, err = cli("compile", f"run.include_path={tasks}", "run.tasks=[mc]", f"--out={out}")
    return rc, err, out


def _refused(rc: int, err: str, out: Path, needle: str) -> None:
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert "task mc" in line and "mc.yaml" in line and "field doc_to_target" in line and "doc 1" in line, line
    assert needle in line, line
    assert not out.exists()


@pytest.mark.parametrize("index", [-1, len(CHOICES), len(CHOICES) + 1, -len(CHOICES)])
def test_index_just_outside_the_choices_is_a_compile_error(index: int, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    rc, err, out = _compile(tmp_path, cli, [index])
    _refused(rc, err, out, f"target index {index} is out of range of doc_to_choice (3 choices)")


@pytest.mark.parametrize("index", [0, len(CHOICES) - 1])
def test_first_and_last_index_compile(index: int, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    rc, err, out = _compile(tmp_path, cli, [index])
    assert rc == 0, err
    docs = [r for r in read_plan(out).docs if r.task == "mc"]
    assert [d.target for d in docs] == [0, index]
    assert all(d.choices == CHOICES for d in docs)


@pytest.mark.parametrize("target", ["delta", "Alpha", "alpha ", ""])
def test_string_target_not_among_the_choices_is_a_compile_error(target: str, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    rc, err, out = _compile(tmp_path, cli, [target])
    _refused(rc, err, out, f"target {target!r} is not one of the doc_to_choice choices")


@pytest.mark.parametrize("target", ["alpha", "gamma"])
def test_string_target_among_the_choices_compiles(target: str, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    rc, err, out = _compile(tmp_path, cli, [target])
    assert rc == 0, err
    assert [d.target for d in read_plan(out).docs if d.task == "mc"] == [0, target]
