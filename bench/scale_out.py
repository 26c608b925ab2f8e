"""Scheduling overhead of ``lmeval execute --workers N`` (executor/pool/) at 1, 2, 4 and 8 workers.

The fake backend answers every request after a fixed latency (``model.engine.delay_s``, slept per request,
eight requests a batch), so an ideal pool of N workers needs exactly ``requests x latency / N`` seconds
once its engines are up; everything beyond that is the pool's overhead: chunking, Ray calls, moving rows,
the driver's checks and atomic commits, idle gaps between chunks and the tail. A local Ray instance with
8 logical GPUs (one per worker; the machine has none) runs all rounds; the plan is real data (arc_easy
log-likelihoods and gsm8k generations, built as the executor tests build theirs).

Efficiency = ideal engine time / worker time available = ``requests x latency / sum over workers of (end -
that worker's ready time)``: the share of the time a started worker spent answering requests. Engine start
is excluded (it is the model load, the same with or without a pool, and on a real GPU machine the engines
start in parallel); the process wall and the time to start the workers are reported beside it.

    PYTHONPATH=. .venv/bin/python bench/scale_out.py [--latency 0.005] [--arc 1500] [--gsm8k 300]

Writes ``bench/results/scale_out.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build_plan(path: Path, arc: int, gsm8k: int) -> None:
    from tests.executor import plantools as pt

    pt.build(path, [pt.arc_easy(arc), pt.gsm8k(gsm8k)])


def one_round(plan: Path, out: Path, workers: int, latency: float) -> dict[str, Any]:
    from lmeval.executor import execute
    from lmeval.plans.results.manifest import read_manifest

    t = time.monotonic()
    execute(
        str(plan), out=str(out), overrides=["model.backend=fake", f"model.engine.delay_s={latency}"],
        progress=False, workers=workers, ray="auto",
    )  # fmt: skip
    wall = time.monotonic() - t
    m = read_manifest(out)
    ex = m.execution
    span = float(ex["span_s"])
    per = ex["per_worker"]
    available = sum(span - float(w["ready_s"]) for w in per)
    busy = sum(float(w["busy_s"]) for w in per)
    requests = int(m.stats["requests"])
    ideal = requests * latency
    return {
        "workers": workers,
        "requests": requests,
        "chunks": int(ex["chunks"]),
        "wall": wall,
        "span": span,
        "last_ready": max(float(w["ready_s"]) for w in per),
        "ideal_per_worker": ideal / workers,
        "efficiency": ideal / available,
        "busy_share": busy / available,
        "chunks_per_worker": [int(w["chunks"]) for w in per],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.005, help="seconds per request (default 0.005)")
    ap.add_argument("--arc", type=int, default=1500, help="arc_easy docs (4 requests each)")
    ap.add_argument("--gsm8k", type=int, default=300, help="gsm8k docs (1 generation each)")
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "scale_out.md"))
    args = ap.parse_args()

    import ray
    from machine_info import cpu_model  # bench/ is sys.path[0]

    load0 = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="lmeval-scale-"))
    plan = tmp / "plan.msgpack"
    build_plan(plan, args.arc, args.gsm8k)
    t = time.monotonic()
    ray.init(num_cpus=2, num_gpus=8, include_dashboard=False, log_to_driver=False)
    ray_start = time.monotonic() - t
    rows = []
    try:
        for n in (int(x) for x in args.workers.split(",")):
            r = one_round(plan, tmp / f"r{n}", n, args.latency)
            rows.append(r)
            print(
                f"workers {n}: efficiency {r['efficiency']:.3f}, span {r['span']:.1f}s (ideal "
                f"{r['ideal_per_worker']:.1f}s after start), wall {r['wall']:.1f}s", file=sys.stderr,
            )  # fmt: skip
    finally:
        ray.shutdown()
    load1 = os.getloadavg()

    lines = [
        "# `lmeval execute --workers N` scheduling overhead (fake backend, fixed per-request latency)",
        "",
        f"Plan: arc_easy first {args.arc} test docs (log-likelihood) + gsm8k first {args.gsm8k} test docs "
        f"(generation), {rows[0]['requests']} requests, {rows[0]['chunks']} chunks (default chunk size); fake "
        f"backend at {args.latency * 1000:g} ms per request (ideal single engine: "
        f"{rows[0]['requests'] * args.latency:.1f} s). Local Ray {ray.__version__} started once in the "
        f"benchmark process (`ray.init(num_cpus=2, num_gpus=8)`, {ray_start:.1f} s), one logical GPU per worker.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}; "
        f"load average at start {' '.join(f'{x:.1f}' for x in load0)}, at end "
        f"{' '.join(f'{x:.1f}' for x in load1)} (a shared machine: other jobs ran at the same time).",
        "",
        "Efficiency = requests x latency / sum over workers of (end - the worker's ready time). Span: dispatch "
        "of the first chunk to the last commit; last ready: when the last worker had started (actor and "
        "engine start, excluded from the efficiency).",
        "",
        "| workers | efficiency | engine-busy share | span (s) | ideal after start (s) | last ready (s) | "
        "execute wall (s) | chunks per worker |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workers']} | **{r['efficiency']:.3f}** | {r['busy_share']:.3f} | {r['span']:.2f} | "
            f"{r['ideal_per_worker']:.2f} | {r['last_ready']:.2f} | {r['wall']:.2f} | "
            f"{' '.join(map(str, r['chunks_per_worker']))} |"
        )
    lines += ["", f"Command: `PYTHONPATH=. .venv/bin/python bench/scale_out.py --latency {args.latency} "
              f"--arc {args.arc} --gsm8k {args.gsm8k}`", ""]  # fmt: skip
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
