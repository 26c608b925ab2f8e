"""Shared helpers for compiler tests: the data directory, a CLI runner, an lm-eval-style YAML dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    env = os.environ.get("LMEVAL_DATA_DIR")
    return Path(env) if env else (REPO / ".." / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def data() -> Path:
    d = data_dir()
    assert (d / "arc_easy" / "test.jsonl").is_file(), f"benchmark data not found in {d}"
    return d


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run ``lmeval ARGS`` in-process; returns (exit code, stdout, stderr)."""
    from lmeval.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        rc = main(list(args))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run
