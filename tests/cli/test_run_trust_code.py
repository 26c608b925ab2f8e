"""``lmeval run --trust-code``: the same consent as ``lmeval score --trust-code`` (fake backend, no engine).

A task whose ``process_results`` is a ``!function`` (wikitext's shape) cannot be scored without consent:
``lmeval run`` then fails with ``score``'s one-line error before the model runs; with ``--trust-code`` it
scores. The flag is the only switch: nothing else changes between the runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from lmeval.cli import main
from tests.e2e.bos_ref import write_tasks

DATA = Path(os.environ.get("LMEVAL_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))


def _run(tmp: Path, name: str, *flags: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", f"run.include_path={tmp / 'tasks'}", "run.tasks=[bos_rolling_pr]", "run.limit=3",
            "model.backend=fake", "--out", str(tmp / name), "--plan-out", str(tmp / f"{name}.msgpack"),
            "--no-progress", *flags]  # fmt: skip
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_run_trust_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LMEVAL_TRUST_CODE", raising=False)
    write_tasks(tmp_path / "tasks", DATA)
    rc, _, err = _run(tmp_path, "refused")
    assert rc == 2
    [line] = err.strip().splitlines()
    assert line.startswith("lmeval run: error: ") and "bos_utils.process_results" in line
    assert "rerun with --trust-code" in line
    assert not (tmp_path / "refused").exists()  # refused before the model ran

    rc, stdout, _ = _run(tmp_path, "trusted", "--trust-code")
    assert rc == 0 and Path(stdout.strip().splitlines()[-1]) == tmp_path / "trusted"
    res = json.loads((tmp_path / "trusted" / "results.json").read_text())["results"]["bos_rolling_pr"]
    assert {"word_perplexity,none", "byte_perplexity,none", "bits_per_byte,none"} <= set(res)

    monkeypatch.setenv("LMEVAL_TRUST_CODE", "1")  # the environment grants nothing
    rc, _, err = _run(tmp_path, "env")
    assert rc == 2 and "rerun with --trust-code" in err
