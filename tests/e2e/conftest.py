"""Session fixtures of the real-model comparison (``tests/e2e/test_real_model.py``): the converted SmolLM2
folder and the three runs on it, each computed once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e import real_ref, realmodel
from tests.e2e.background import in_background
from tests.e2e.real_tasks import write_real_tasks
from tests.e2e.smollm2_run import run_smollm2
from tests.support import data_dir


@pytest.fixture(scope="session")
def smollm2_dir():  # type: ignore[no-untyped-def]
    return realmodel.smollm2_dir()


@pytest.fixture(scope="session")
def real_runs(smollm2_dir, tmp_path_factory: pytest.TempPathFactory) -> realmodel.Runs:  # type: ignore[no-untyped-def]
    # LMEVAL_E2E_REAL_WORK=DIR keeps the work folder and reuses its finished lmeval runs (for developing the
    # checks; lm-eval's side is cached anyway); CI leaves it unset and runs everything
    keep = os.environ.get("LMEVAL_E2E_REAL_WORK")
    work = Path(keep) if keep else tmp_path_factory.mktemp("real-model")
    tasks = work / "tasks"
    write_real_tasks(tasks, data_dir(), realmodel.SIZES)
    # lm-eval's side runs beside ours (tests/e2e/background.py): the same results, one wait instead of two
    ref_job = in_background(real_ref.reference, smollm2_dir, tasks, realmodel.RUNS)
    ours = {b: realmodel.lmeval_side(smollm2_dir, tasks, b, work, reuse=bool(keep)) for b in realmodel.RUN_ORDER}
    ref = ref_job.result()
    comps = {b: realmodel.compare_all(ours[b], ref) for b in realmodel.BACKENDS}
    return realmodel.Runs(smollm2_dir, tasks, ref, ours, comps)


@pytest.fixture(scope="session")
def smollm2_vllm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One vLLM run of SmolLM2 (arith, the capital JSONL task, gsm8k_r4: tests/e2e/smollm2_run.py), scored."""
    return run_smollm2(tmp_path_factory.mktemp("smollm2-vllm"))
