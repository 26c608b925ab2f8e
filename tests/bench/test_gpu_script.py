"""``bench/gpu.sh``, the GPU device check of #36: its CPU dry run compiles every plan and prints the commands
the GPU run would start; without a GPU the real run refuses in one line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": str(REPO / ".venv" / "bin" / "python"), "CUDA_VISIBLE_DEVICES": ""}
    if not Path(env["PYTHON"]).exists():
        env.pop("PYTHON")
    return subprocess.run(["bash", str(REPO / "bench" / "gpu.sh"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_dry_run_compiles_every_task_and_prints_both_sides() -> None:
    p = _run("--dry-run")
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout
    assert "dry run: 3 task x backend pairs compiled; no engine started" in out
    for label in ("mmlu 5-shot (5 subjects)", "arc_easy 0-shot (200 docs)", "gsm8k 5-shot (10 docs, 256 tokens)"):
        assert f"{label} [vllm]" in out, label
    ours = [ln for ln in out.splitlines() if ln.strip().startswith("ours:")]
    theirs = [ln for ln in out.splitlines() if ln.strip().startswith("lm-eval:")]
    assert len(ours) == len(theirs) == 3
    assert all("-m lmeval run" in ln and "model.backend=vllm" in ln for ln in ours)
    assert all("--model vllm" in ln and "--log_samples" in ln for ln in theirs)
    plans = [ln.split("plan ", 1)[1] for ln in out.splitlines() if ln.strip().startswith("plan ")]
    assert len(plans) == 3 and all(p.endswith(".msgpack") for p in plans)
    assert "load average at start" in out


def test_real_run_without_a_gpu_refuses_in_one_line() -> None:
    p = _run()
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == "gpu.sh: no CUDA GPU visible to torch (use --dry-run on a CPU)"
