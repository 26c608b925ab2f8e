"""lm-eval 0.5's prompt formats (#55): ``NAME@mcqa|cloze|generate|cot`` and a task's own ``formats:`` block
compile to the requests lm-eval 0.5.0.dev1 builds, byte for byte, and what it refuses is refused here in one
line. The goldens are lm-eval 0.5.0.dev1's own Instances on the local data (tests/parity/lm_eval_05/dump.py,
run in a venv of its own): arc_easy, arc_challenge, three MMLU subjects, piqa and boolq as lm-eval's own
YAMLs (``lm_eval:NAME``, the same files in 0.4.13 and 0.5.0.dev1) and as YAMLs written in 0.5's style
(tests/parity/lm_eval_05/yaml), 0 and 5 shots, 3 documents each."""

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

HERE = Path(__file__).resolve().parents[2] / "parity" / "lm_eval_05"
YAMLS = HERE / "yaml"
CATALOG = ("arc_easy", "arc_challenge", "mmlu_anatomy", "mmlu_astronomy", "mmlu_high_school_geography", "piqa", "boolq")
FORMATS = ("mcqa", "cloze", "generate", "cot")
BLOCKS = ("arc_formats", "arc_format_string", "arc_format_type")


@cache
def golden() -> dict[str, Any]:
    with gzip.open(HERE / "golden" / "requests.json.gz", "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    assert doc["lm_eval"] == "0.5.0.dev1" and doc["limit"] == 3 and doc["fewshot_seed"] == 1234
    return dict(doc["cases"])


def _selected(name: str) -> str:
    """How a golden's task name is selected here: lm-eval's own YAMLs through its catalog."""
    return f"lm_eval:{name}" if name.split("@")[0] in CATALOG else name


def _cases(kind: str, shots: int) -> dict[str, dict[str, Any]]:
    """Golden cases (name -> case) of one kind: ``catalog``, ``style05`` or ``blocks``."""
    out = {}
    for cid, case in golden().items():
        name, _, n = cid.partition("/")
        base = name.split("@")[0]
        if n != f"{shots}shot":
            continue
        style05 = base.endswith("_05") and base.removesuffix("_05") in CATALOG
        wanted = {"catalog": base in CATALOG, "style05": style05, "blocks": base in BLOCKS}
        if wanted[kind]:
            out[name] = case
    return out


def _compile(names: list[str], shots: int, *extra: str) -> tuple[Any, list[dict[str, Any]]]:
    header, records = compiler.compile_plan(
        [
            f"run.tasks=[{','.join(names)}]",
            f"run.data_dir={_data()}",
            "run.limit=3",
            f"run.num_fewshot={shots}",
            f"run.include_path={YAMLS}",
            *extra,
        ]  # fmt: skip
    )
    return header, instance_dicts(records)


def _data() -> Path:
    from tests.compiler.conftest import data_dir

    return data_dir()


@pytest.mark.parametrize("shots", [0, 5])
@pytest.mark.parametrize("kind", ["catalog", "style05", "blocks"])
def test_requests_are_lm_eval_05s_byte_for_byte(kind: str, shots: int, data: Path) -> None:
    cases = {n: c for n, c in _cases(kind, shots).items() if "instances" in c}
    assert len(cases) == {"catalog": 12, "style05": 28, "blocks": 11}[kind]
    _, ours = _compile([_selected(n) for n in cases], shots)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for d in ours:
        by_task.setdefault(d["task"], []).append(dict(d, task="t"))
    assert sorted(by_task) == sorted(n for n in cases)
    for name, case in cases.items():
        ref = [dict(i, task="t") for i in case["instances"]]
        out = compare(by_task[name], ref, name, kind)
        assert out.ok, f"{name}/{shots}shot: {out.first.describe() if out.first else out}"
        assert out.matched == len(ref) > 0


# lm-eval 0.5's refusal -> the words of ours (each a one-line CompileError naming file, task and field)
_REFUSALS = {
    "metric acc is defined but has output_type": "metric 'acc' does not apply to generate_until tasks",
    "Error rendering template": "template refers to an undefined variable: 'label' is undefined",
    "not found in task formats": "format 'cot' not found in the task's formats (it has mcqa, cloze, generate, tight)",
}


def _refused() -> list[tuple[str, str]]:
    out = []
    for cid, case in golden().items():
        name, _, n = cid.partition("/")
        if "error" in case and n.endswith("shot") and not name.startswith("mmlu::"):
            out.append((cid, case["error"]))
    return out


def test_every_case_is_accepted_or_refused_as_lm_eval_05_does() -> None:
    refused = {cid.split("/")[0] for cid, _ in _refused()}
    # its own multiple-choice YAMLs: @mcqa and @cloze (boolq's local data has no `label`: refused too),
    # never @generate / @cot; a YAML in 0.5's style: all four
    assert refused == {f"{t}@{f}" for t in CATALOG for f in ("generate", "cot")} | {
        "boolq@mcqa",
        "boolq@cloze",
        "arc_formats@cot",
    }


@pytest.mark.parametrize(("cid", "error"), _refused(), ids=[c for c, _ in _refused()])
def test_what_lm_eval_05_refuses_is_refused_in_one_line(cid: str, error: str, data: Path) -> None:
    name, _, shots = cid.partition("/")
    expect = next(ours for theirs, ours in _REFUSALS.items() if theirs in error)
    with pytest.raises(CompileError) as e:
        _compile([_selected(name)], int(shots[0]))
    msg = str(e.value)
    assert expect in msg and "\n" not in msg and f"task {name.split('@')[0]}" in msg


def test_run_format_takes_either_vocabulary(data: Path) -> None:
    """``run.format=mcqa`` is ``NAME@mcqa`` for every multiple-choice task; OLMES' and lm-eval's names of
    one task live in one plan, each its own requests."""
    header, ours = _compile(["lm_eval:arc_easy", "gsm8k"], 0, "run.format=mcqa", "run.limit=2")
    assert [t.name for t in header.tasks] == ["arc_easy@mcqa", "gsm8k"]
    _, alone = _compile(["lm_eval:arc_easy@mcqa"], 0, "run.limit=2")
    assert [d for d in ours if d["task"] == "arc_easy@mcqa"] == alone
    header, both = _compile(["arc_easy@mcf", "arc_easy@mcqa"], 0, "run.limit=1")
    assert [t.name for t in header.tasks] == ["arc_easy@mcf", "arc_easy@mcqa"]
    mcf, mcqa = ([d["arguments"][0] for d in both if d["task"] == t] for t in ("arc_easy@mcf", "arc_easy@mcqa"))
    assert mcf[0].startswith("Question: Which") and mcqa[0].startswith("Question: Question: Which")
    record = {"name": "mcqa", "vocabulary": "lm-eval-0.5", "task": "arc_easy", "metric": "acc,none"}
    assert header.tasks[1].config["format"] == record


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["+task=arc_easy@xyz"],
            "unknown prompt format 'xyz'; expected one of cf, mcf, gen (OLMES) or mcqa, cloze, "
            "generate, cot (lm-eval 0.5)",
        ),  # fmt: skip
        (["run.format=mcqaa", "+task=arc_easy"], "run.format"),
        (["run.tasks=[arc_formats@mcqa+parens]", f"run.include_path={YAMLS}"], "not found in the task's formats"),
    ],
)
def test_refusals_of_ours(overrides: list[str], message: str, data: Path) -> None:
    with pytest.raises(CompileError) as e:
        compiler.compile_plan([*overrides, f"run.data_dir={data}", "run.limit=1"])
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("formats", "message"),
    [
        ({"type": "mcqa", "instruction": 5}, "format 'mcqa': instruction cannot be 5"),
        ({"type": "mcqa", "choice_labels": "roman"}, "format 'mcqa': choice_labels cannot be 'roman'"),
        ({"type": "mcqa", "question_suffix": "?"}, "format 'mcqa' has no field 'question_suffix'"),
        ({"type": "mcqa", "choice_labels": "numbers"}, "choice_labels 'numbers' on a multiple_choice format"),
        ({"type": "essay"}, "unknown format type 'essay'; lm-eval 0.5's formats are mcqa, cloze, generate, cot"),
        ({"mcqa": 3}, "formats.mcqa must be a mapping of overrides, a format name or empty"),
        ([1, 2], "formats must be a format name or a mapping, got list"),
    ],
)
def test_a_bad_formats_block_is_refused_in_one_line(formats: Any, message: str, data: Path, tmp_path: Path) -> None:
    import yaml

    cfg = yaml.safe_load((YAMLS / "arc_easy_05.yaml").read_text())
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**cfg, "task": "bad", "formats": formats}))
    with pytest.raises(CompileError) as e:
        compiler.compile_plan(
            ["run.tasks=[bad]", f"run.include_path={tmp_path}", f"run.data_dir={data}", "run.limit=1"]
        )
    msg = str(e.value)
    assert message in msg and "\n" not in msg and "bad.yaml" in msg and "field formats" in msg
