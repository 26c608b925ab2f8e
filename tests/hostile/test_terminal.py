"""Terminal output is data-safe (``common/termsafe.py``): control characters in a task name, a prompt and a
document reach no terminal raw, through ``compile``, ``show``, ``score`` and a one-line error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lmeval.common.termsafe import term_safe
from tests.hostile.corpus import FAKE, MINI_YAML, PY, env

ESC = "\x1b[2J\x1b]0;pwned\x07"


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([PY, "-m", "lmeval", *argv], env=env(), cwd=cwd, capture_output=True, timeout=300)


def _raw_controls(data: bytes) -> set[int]:
    return {b for b in data if (b < 0x20 and b not in (0x09, 0x0A)) or b == 0x7F}


def test_term_safe_escapes_controls_and_surrogates() -> None:
    assert term_safe("ok\tline\n") == "ok\tline\n"
    assert term_safe("a\x1b[31mb\rc\x00\x9b\u202e\ud800") == "a\\x1b[31mb\\x0dc\\x00\\x9b\\u202e\\ud800"
    assert term_safe("two\nlines", one_line=True) == "two\\x0alines"


def test_control_characters_in_task_names_prompts_and_docs_are_escaped(tmp_path: Path) -> None:
    tasks, data = tmp_path / "tasks", tmp_path / "data" / "mini"
    tasks.mkdir()
    data.mkdir(parents=True)
    yaml_text = MINI_YAML.replace(
        'doc_to_text: "Q: {{question}}\\nA:"', 'doc_to_text: "Q\\r\\u001b[1A: {{question}}\\nA:"'
    )
    (tasks / "t.yaml").write_text(yaml_text, encoding="utf-8")
    rows = [{"question": f"{i} +\x1b[31m 1\r", "answer": str(i + 1)} for i in range(3)]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plan, out = tmp_path / "p.msgpack", tmp_path / "r"
    steps = [
        ("compile", f"run.include_path={tasks}", "run.tasks=[mini]", f"run.data_dir={tmp_path / 'data'}",
         "--out", str(plan)),
        ("show", str(plan), "--examples", "2"),
        ("execute", str(plan), FAKE, "--out", str(out), "--no-progress"),
        ("score", str(out)),
    ]  # fmt: skip
    for argv in steps:
        p = _run(*argv, cwd=tmp_path)
        assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
        assert _raw_controls(p.stdout) == set(), (argv[0], p.stdout[-2000:])
        assert _raw_controls(p.stderr) == set(), (argv[0], p.stderr[-2000:])
        if argv[0] == "show":
            assert b"\\x1b" in p.stdout, (argv[0], p.stdout[-2000:])
    bad = _run("execute", str(tmp_path / f"no-such{ESC}.msgpack"), FAKE, cwd=tmp_path)
    assert bad.returncode == 2 and b"\\x1b[2J" in bad.stderr and _raw_controls(bad.stderr) == set(), bad.stderr
