"""``lmeval diff`` of one task in two prompt formats (#38): the tasks are paired by name and the format is
the cause of every changed prompt."""

from __future__ import annotations

from pathlib import Path

from lmeval import compiler
from lmeval.diff import diff_plans, render_text
from tests.support import data_dir


def _plan(tmp: Path, name: str, data: Path) -> str:
    out = tmp / f"{name.replace('@', '_')}.msgpack"
    compiler.compile_to_file([f"run.tasks=[{name}]", f"run.data_dir={data}", "run.limit=5"], str(out))
    return str(out)


def test_the_format_is_the_cause_of_every_changed_prompt(tmp_path: Path) -> None:
    data = data_dir()
    old, new = _plan(tmp_path, "arc_easy", data), _plan(tmp_path, "arc_easy@mcf", data)
    report = diff_plans(old, new, show=100)
    (task,) = report.tasks
    assert task.name == "arc_easy -> arc_easy@mcf" and task.status == "changed"
    assert task.docs_changed == 5 and task.instances_changed == task.new_instances > 0
    assert [c.cause for c in task.causes] == ["format"]
    assert report.prompts and all(p.causes == ["format"] for p in report.prompts)
    text = render_text(report)
    assert "prompt format" in text and "causes: format" in text and "+ A. " in text


def test_two_formats_differ_only_where_the_format_does(tmp_path: Path) -> None:
    data = data_dir()
    report = diff_plans(_plan(tmp_path, "arc_easy@mcf", data), _plan(tmp_path, "arc_easy@gen", data), show=100)
    (task,) = report.tasks
    assert task.name == "arc_easy@mcf -> arc_easy@gen" and [c.cause for c in task.causes] == ["format"]
    # the same lettered prompt: only the request type (and the continuations it drops) differ
    first = report.prompts[0].diff
    assert "(context unchanged)" in first and "request type: loglikelihood → generate_until" in first
    assert task.instances_removed == 5 * 3  # the other three letters' requests of each document


def test_two_variants_of_a_sweep_differ_by_their_labels_and_seed(tmp_path: Path) -> None:
    """``lmeval diff`` of two sweep members names the variant: the label style and the few-shot seed."""
    data = data_dir()
    out = []
    for name in ("arc_easy@mcf", "arc_easy@mcf+parens+seed1"):
        path = tmp_path / f"{name.replace('@', '_').replace('+', '_')}.msgpack"
        compiler.compile_to_file([f"run.tasks=[{name}]", f"run.data_dir={data}", "run.limit=3",
                                  "run.num_fewshot=2"], str(path))  # fmt: skip
        out.append(str(path))
    report = diff_plans(*out, show=100)
    (task,) = report.tasks
    assert task.name == "arc_easy@mcf -> arc_easy@mcf+parens+seed1" and task.docs_changed == 3
    causes = {c.cause: c for c in task.causes}
    assert set(causes) == {"format", "fewshot"} and causes["format"].docs == 3
    text = render_text(report)
    assert "config.format.labels: 'letters' → 'parens'" in text and "config.format.seed: (absent) → 1" in text
    assert "doc 0: few-shot ids" in text and "+ (A) " in text
