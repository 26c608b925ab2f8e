"""Run our side of the end-to-end comparison: ``lmeval run`` as a user would (a child process)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the environment that makes every process of a run compute as an AVX2-only x86 CPU does (tests/kernelpath)
AVX2_ENV = {"LMEVAL_TEST_CPU_ISA": "avx2", "PYTHONPATH": f"{REPO / 'tests' / 'kernelpath'}{os.pathsep}{REPO}"}


@dataclass
class OurRun:
    backend: str
    out: Path
    plan: Path
    seconds: float
    command: list[str]
    cpu_seconds: float = 0.0  # the child's CPU time: what it costs on idle cores, whatever the load


def lmeval_run(
    tasks: list[str],
    limit: int,
    backend: str,
    work: Path,
    data_dir: str,
    num_fewshot: int | None = None,
    max_gen_toks: int | None = None,
    batch_size: int = 8,
    model_args: tuple[str, ...] = (),
    env_extra: dict[str, str] | None = None,
) -> OurRun:
    """``lmeval run '+task=[...]' run.data_dir=... run.limit=N model.backend=B`` into ``work/<backend>``."""
    out, plan = work / f"results-{backend}", work / f"plan-{backend}.msgpack"
    args = [
        f"+task=[{','.join(tasks)}]",
        f"run.data_dir={data_dir}",
        f"run.limit={limit}",
        f"model.backend={backend}",
        *model_args,
    ]
    if backend == "hf":
        args.append(f"model.batch_size={batch_size}")  # lm-eval's --batch_size 8
    if num_fewshot is not None:
        args.append(f"run.num_fewshot={num_fewshot}")
    if max_gen_toks is not None:
        args.append(f"run.gen_kwargs={{max_gen_toks:{max_gen_toks}}}")
    return run_cli(args, backend, out, plan, env_extra=env_extra)


def run_cli(
    args: list[str],
    backend: str,
    out: Path,
    plan: Path,
    flags: tuple[str, ...] = (),
    env_extra: dict[str, str] | None = None,
) -> OurRun:
    """``lmeval run ARGS [FLAGS] --out OUT --plan-out PLAN --no-progress`` in a child process, offline."""
    cmd = [sys.executable, "-m", "lmeval", "run", *args, *flags, "--out", str(out), "--plan-out", str(plan),
           "--no-progress"]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO))
    env.update(env_extra or {})
    env.pop("LMEVAL_TRUST_CODE", None)
    t, cpu = time.monotonic(), _children_cpu()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    seconds, cpu = time.monotonic() - t, _children_cpu() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    last = proc.stdout.strip().splitlines()[-1]
    if Path(last) != out:
        raise RuntimeError(f"lmeval run printed {last!r} last, expected the results dir {out}")
    return OurRun(backend, out, plan, seconds, ["lmeval", "run", *args, *flags], cpu)


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
