"""Quiet runs (``executor.quiet``): what a backend's libraries print, from Python or from C++ straight to file
descriptors 1 and 2, goes to ``engine.log`` in the results directory; with ``verbose`` it reaches the
terminal. A fake backend plays the noisy engine."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from lmeval.executor.backends.fake import FakeBackend
from lmeval.executor.options import RunOptions
from lmeval.executor.run import run_plan
from lmeval.plans.results.manifest import read_results


def noisy(spec: Any, model_dir: Path | None) -> FakeBackend:
    os.write(1, b"C++ says hello on fd 1\n")
    os.write(2, b"[W utils.cpp:68] Warning: NUMA binding on fd 2\n")
    # a logging handler made at import time holds the process's real stderr (pytest swaps sys.stderr)
    print("INFO vllm engine started; torch.distributed.reduce_op is deprecated", file=sys.__stderr__, flush=True)
    return FakeBackend(spec, model_dir)


@pytest.mark.parametrize("verbose", [False, True])
def test_engine_output_goes_to_the_log_unless_verbose(
    mixed_plan: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], verbose: bool
) -> None:
    out = tmp_path / "r"
    opts = RunOptions(out=str(out), overrides=["model.backend=fake"], progress=False, verbose=verbose)
    run_plan(str(mixed_plan), opts, backend_factory=noisy)
    seen = capfd.readouterr()
    terminal = seen.out + seen.err
    noise = ("fd 1", "fd 2", "engine started", "reduce_op")
    assert read_results(out).height > 0
    assert "executed " in seen.err  # lmeval's own summary line stays on the terminal
    if verbose:
        assert all(n in terminal for n in noise) and not (out / "engine.log").exists()
    else:
        assert not any(n in terminal for n in noise)
        log = (out / "engine.log").read_text()
        assert all(n in log for n in noise)
