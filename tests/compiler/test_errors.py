"""Bad input: one-line error naming file, task, field, doc id; exit status 2; nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

BASE = """task: base
dataset_path: json
dataset_kwargs: {{data_files: {{test: {data}}}}}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{q}}}}"
doc_to_target: t
doc_to_choice: c
"""


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    d = tmp_path / "tasks"
    d.mkdir()
    good = tmp_path / "good.jsonl"
    good.write_text('{"q": "a", "c": ["x", "y"], "t": 1}\n{"q": "b", "c": ["x", "y"], "t": 0}\n')
    bad_target = tmp_path / "bad_target.jsonl"
    bad_target.write_text('{"q": "a", "c": ["x", "y"], "t": 1}\n{"q": "b", "c": ["x", "y"], "t": 5}\n')
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text('{"q": "a", "c": ["x", "y"], "t": 1}\n{"q": \n')
    (d / "base.yaml").write_text(BASE.format(data=good))
    variants = {
        "undef": 'doc_to_text: "{{nosuch}}"',
        "missing_field": 'doc_to_choice: nosuch_field\ndoc_to_target: "{{t}}"',
        "syntax": 'doc_to_text: "{{q"',
        "badtype": "output_type: multiple_choise",
        "sampler": "fewshot_config: {sampler: balanced}",
        "nofn": "doc_to_text: !function nomod.fn",
        "unknown_key": "doc_to_txt: q",
        "out_of_range": f"dataset_kwargs: {{data_files: {{test: {bad_target}}}}}",
        "malformed": f"dataset_kwargs: {{data_files: {{test: {malformed}}}}}",
        "missing_file": f"dataset_kwargs: {{data_files: {{test: {tmp_path / 'nope.jsonl'}}}}}",
        "neg_shots": "num_fewshot: -1",
        "bad_delim": "target_delimiter: 3",
    }
    for name, body in variants.items():
        (d / f"{name}.yaml").write_text(f"include: base.yaml\ntask: {name}\n{body}\n")
    return d


CASES = [
    ("undef", ["field doc_to_text", "doc 0", "'nosuch' is undefined"]),
    ("missing_field", ["field doc_to_choice", "doc 0"]),
    ("syntax", ["field doc_to_text", "syntax error"]),
    ("badtype", ["field output_type", "multiple_choise", "did you mean multiple_choice"]),
    ("sampler", ["field fewshot_config.sampler", "unknown sampler 'balanced'"]),
    ("nofn", ["field doc_to_text", "cannot import '!function nomod.fn'", "nomod.py"]),
    ("unknown_key", ["field doc_to_txt", "did you mean doc_to_text"]),
    ("out_of_range", ["field doc_to_target", "doc 1", "target index 5 is out of range"]),
    ("malformed", ["malformed.jsonl:2", "malformed data row"]),
    ("missing_file", ["nope.jsonl", "missing data file"]),
    ("neg_shots", ["field num_fewshot", "non-negative"]),
    ("bad_delim", ["field target_delimiter", "must be a string"]),
]


@pytest.mark.parametrize(("task", "needles"), CASES, ids=[c[0] for c in CASES])
def test_task_errors(task: str, needles: list[str], tasks_dir: Path, cli, tmp_path: Path) -> None:
    out = tmp_path / "plan.msgpack"
    rc, stdout, err = cli("compile", f"run.include_path={tasks_dir}", f"run.tasks=[{task}]", f"--out={out}")
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lmeval compile: error: "), err
    assert "Traceback" not in err
    if task not in ("malformed", "missing_file"):
        assert f"task {task}" in lines[0] and f"{task}.yaml" in lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    assert not out.exists() and not list(tmp_path.glob("*.msgpack"))


OVERRIDE_CASES = [
    (["+task=arc_chalenge"], ["unknown task 'arc_chalenge'", "did you mean arc_challenge"]),
    (["run.tasks=[arc_chalenge]"], ["unknown task or group 'arc_chalenge'", "did you mean arc_challenge"]),
    (["+task=arith", "run.num_fewshot=-1"], ["run.num_fewshot", "non-negative integer"]),
    (["+task=arith", "run.num_fewshot=abc"], ["run.num_fewshot", "'abc'"]),
    (["+task=arith", "run.limit=0"], ["run.limit"]),
    (["+task=arith", "run.fewshot_as_multiturn=true"], ["run.fewshot_as_multiturn", "apply_chat_template"]),
    (["+task=arith", "run.apply_chat_template=maybe"], ["run.apply_chat_template", "true or false"]),
    (["+task=arith", "run.data_dir=/nonexistent/dir"], ["run.data_dir", "does not exist"]),
    (["+task=arith", "run.include_path=/nonexistent/dir"], ["run.include_path", "not a directory"]),
    (["+task=arith", "run.nosuch=1"], ["run.nosuch"]),
    (["+task=arith", "model.path=/nonexistent/model"], ["model.path", "does not exist"]),
    ([], ["no task selected"]),
]


@pytest.mark.parametrize(("overrides", "needles"), OVERRIDE_CASES, ids=[" ".join(c[0]) for c in OVERRIDE_CASES])
def test_override_errors(
    overrides: list[str], needles: list[str], cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli("compile", *overrides)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    assert not list(tmp_path.rglob("*.msgpack"))


def test_zero_token_continuation(tmp_path: Path, cli) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"q": "a", "t": ""}\n')
    (tmp_path / "z.yaml").write_text(
        f"task: z\ndataset_path: json\ndataset_kwargs: {{data_files: {{test: {data}}}}}\ntest_split: test\n"
        'output_type: loglikelihood\ndoc_to_text: "{{q}}"\ndoc_to_target: "{{t}}"\n'
    )
    rc, _, err = cli("compile", f"run.include_path={tmp_path}", "run.tasks=[z]", f"--out={tmp_path / 'p.msgpack'}")
    assert rc == 2 and "task z" in err and "doc 0" in err and "zero tokens" in err


def test_no_data_dir_offline_suggests_data_dir(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = tmp_path / "p.msgpack"
    p = subprocess.run(
        [sys.executable, "-m", "lmeval", "compile", "+task=arc_easy", f"--out={out}"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "task arc_easy" in lines[0] and "run.data_dir=DIR" in lines[0], p.stderr
    assert not out.exists()


def test_broken_yaml_is_named_instead_of_unknown_task(tmp_path: Path, cli) -> None:
    (tmp_path / "broken.yaml").write_text("task: broken\ndoc_to_text: [unclosed\n")
    rc, _, err = cli("compile", f"run.include_path={tmp_path}", "run.tasks=[broken]", f"--out={tmp_path / 'p.msgpack'}")
    assert rc == 2 and "broken.yaml" in err and "invalid YAML" in err and len(err.strip().splitlines()) == 1
