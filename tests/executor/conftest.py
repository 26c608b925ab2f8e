from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmeval.plans.results.manifest import read_results
from tests.executor import plantools as pt

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    from lmeval.common.tinymodel import ensure_tiny_model

    return ensure_tiny_model()


@pytest.fixture(scope="session")
def mixed_plan(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """Real rows of three tasks: arc_easy (loglikelihood), gsm8k (generation), gsm8k text (rolling)."""
    path = tmp_path_factory.mktemp("plans") / "mixed.msgpack"
    pt.build(path, [pt.arc_easy(40), pt.gsm8k(12), pt.rolling(6), pt.winogrande(10)])
    return path


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full_env.pop("LMEVAL_EXECUTOR_FAULT", None)
    if env and "LMEVAL_EXECUTOR_FAULT" in env:
        full_env["LMEVAL_EXECUTOR_FAULT"] = env["LMEVAL_EXECUTOR_FAULT"]
    return subprocess.run(
        [sys.executable, "-m", "lmeval", *args],
        env=full_env,
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def frame(results_dir: Path):  # type: ignore[no-untyped-def]
    return read_results(results_dir)


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` with its bytes (to prove nothing was touched)."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}
