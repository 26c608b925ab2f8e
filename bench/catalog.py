"""Benchmark name lookup in lm-eval's installed task catalog (issue #16): lmeval's index of lm_eval/tasks
(built cold, then read from its cache) against lm-eval 0.4.13's own ``TaskManager()`` indexing, each in a
fresh process, plus ``lmeval ls`` and a one-task compile through the catalog with a warm cache.

Wall and CPU seconds per step (median of ``--repeats``), the load average and the machine. Writes
``bench/results/catalog.md``.

    .venv/bin/python bench/catalog.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

DATA = ROOT.parent / "shared" / "data"


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(args, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    rows: list[tuple[str, list[tuple[float, float]]]] = []
    with tempfile.TemporaryDirectory(prefix="lmeval-catalog-bench-") as tmp:
        cold: list[tuple[float, float]] = []
        for i in range(a.repeats):
            e = dict(env, LMEVAL_CACHE=str(Path(tmp) / f"cold{i}"))
            cold.append(_run([py, "-c", "from lmeval.compiler import catalog; assert catalog()"], e))
        rows.append(("lmeval: index lm_eval/tasks, cold (no cache)", cold))
        warm_env = dict(env, LMEVAL_CACHE=str(Path(tmp) / "cold0"))
        steps = {
            "lmeval: index from its cache (stat walk + JSON)": [
                py,
                "-c",
                "from lmeval.compiler import catalog; assert catalog()",
            ],  # fmt: skip
            "lmeval ls (all names), warm cache": [py, "-m", "lmeval", "ls"],
            "lmeval compile run.tasks=[lm_eval:piqa] limit 10, warm cache": [
                py,
                "-m",
                "lmeval",
                "compile",
                "run.tasks=[lm_eval:piqa]",
                f"run.data_dir={DATA}",
                "run.limit=10",
                f"run.out={tmp}/p.msgpack",
            ],
            "lm-eval 0.4.13: TaskManager() (its indexing)": [
                py,
                "-c",
                "from lm_eval.tasks import TaskManager; TaskManager()",
            ],  # fmt: skip
        }
        for name, cmd in steps.items():
            rows.append((name, [_run(cmd, warm_env) for _ in range(a.repeats)]))
    load = os.getloadavg()
    lines = [
        "# lm-eval catalog lookup",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}; "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min).",
        f"Each step is a fresh process; median of {a.repeats} (all runs listed).",
        "",
        "| step | wall s (median) | CPU s (median) | runs (wall) |",
        "|---|---:|---:|---|",
    ]
    for name, runs in rows:
        walls = [w for w, _ in runs]
        cpus = [c for _, c in runs]
        lines.append(
            f"| {name} | {statistics.median(walls):.2f} | {statistics.median(cpus):.2f} | "
            f"{', '.join(f'{w:.2f}' for w in walls)} |"
        )
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / "catalog.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
