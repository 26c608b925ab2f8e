"""``lmeval validate``: output format and exit statuses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lmeval.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "spec"
ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<id>\S+): (?P<rule>[a-z0-9_]+) \((?P<field>[^)]+)\): .+$")


def test_valid_file_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "tasks.jsonl")
    assert main(["validate", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{path}: 10 lines, all valid"]


def test_bad_file_prints_one_line_per_error_then_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "tasks_bad.jsonl")
    assert main(["validate", path]) == 1
    out = capsys.readouterr().out.splitlines()
    errors, summary = out[:-1], out[-1]
    assert len(errors) == 38
    for n, line in enumerate(errors, 1):
        m = ERROR_LINE.match(line)
        assert m, line
        assert (m["file"], int(m["line"])) == (path, n)
    assert errors[10].startswith(f"{path}:11: bad-missing: duplicate_task_id (task_id)")
    assert summary == f"{path}: 38 lines, 0 valid, 38 invalid (38 errors)"


def test_empty_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[0].startswith(f"{path}:1: -: empty_file (-)")


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_file_exits_2(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "tasks.jsonl"
    if kind == "directory":
        path.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "lmeval", "validate", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("lmeval validate: error: ") and "tasks.jsonl" in proc.stderr
    assert "Traceback" not in proc.stderr
