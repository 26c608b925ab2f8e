"""Benchmark ``lmeval compile`` against lm-eval 0.4.13's request building, same tasks, same data, same run.

Workloads: full MMLU 5-shot (57 subjects, 14,042 docs), ARC-Challenge 25-shot (1,172 docs) and
gsm8k_cot_llama with the tiny model's chat template (1,319 docs, 8-shot multiturn).

- **ours**: ``lmeval compile ... run.out=PLAN`` as a fresh process (what a user waits for: start-up, Hydra,
  data, rendering, token ids, hashing, writing), and ``compiler.compile_to_file`` in-process (warm).
  Median of ``--repeats`` runs. Every plan carries token ids (``model=tiny``).
- **lm-eval**: its own subprocess (``tests/parity/lmeval_reference.py``: offline, local JSONL, scratch
  HF_HOME): ``TaskManager()`` (indexing all built-in task folders), ``TaskManager.load`` (task construction
  and dataset loading from the datasets cache, warmed first), then ``set_fewshot_seed`` +
  ``build_all_requests`` per task as ``lm_eval.evaluator`` does. Reported with and without the indexing.

Ratios are lm-eval time / our time (higher is better for us; target ≥ 10×). Also checks both sides build
the same number of Instances. Writes ``bench/results/compile.md``.

    .venv/bin/python bench/compile.py [--repeats 3] [--data-dir DIR] [--only mmlu,arc,gsm8k]
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

from tests.parity.lmeval_reference import RefSpec, default_data_dir, lmeval_version, run_worker  # noqa: E402


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    overrides: tuple[str, ...]
    ref: RefSpec


def workloads(model_path: str) -> list[Workload]:
    return [
        Workload(
            "mmlu", "MMLU 5-shot (57 subjects)", ("+task=mmlu", "run.num_fewshot=5"), RefSpec("mmlu", num_fewshot=5)
        ),
        Workload(
            "arc",
            "ARC-Challenge 25-shot",
            ("+task=arc_challenge", "run.num_fewshot=25"),
            RefSpec("arc_challenge", num_fewshot=25),
        ),
        Workload(
            "gsm8k",
            "gsm8k_cot_llama, chat template",
            ("+task=gsm8k_cot_llama", "run.apply_chat_template=true", "run.fewshot_as_multiturn=true"),
            RefSpec("gsm8k_cot_llama", apply_chat_template=True, fewshot_as_multiturn=True, model_path=model_path),
        ),
    ]


def machine() -> str:
    cpu = cpu_model()
    return f"{platform.machine()}, nproc {os.cpu_count()}, {cpu}, Python {platform.python_version()}"


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def ours_cli(overrides: list[str], out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``lmeval compile`` process."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "lmeval", "compile", *overrides, f"run.out={out}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    dt, dc = time.perf_counter() - t0, _children_cpu() - c0
    if p.returncode != 0 or p.stdout.strip().splitlines()[-1] != str(out):
        raise RuntimeError(f"lmeval compile {' '.join(overrides)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, dc


def ours_inprocess(overrides: list[str], out: Path) -> tuple[float, float, int, int]:
    from lmeval.compiler import compile_to_file
    from lmeval.plans.io import PlanReader

    t0, c0 = time.perf_counter(), time.process_time()
    path = compile_to_file(overrides, str(out))
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    with PlanReader(path, verify=False) as reader:
        return dt, dc, reader.header.n_docs, reader.header.n_instances


def fmt_s(x: float) -> str:
    return f"{x:.2f} s" if x < 100 else f"{x:.0f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--only", default="mmlu,arc,gsm8k")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "compile.md")
    args = ap.parse_args(argv)

    from lmeval.common.tinymodel import ensure_tiny_model

    model_path = str(ensure_tiny_model())
    data = (args.data_dir or default_data_dir()).resolve()
    wanted = set(args.only.split(","))
    loads = [w for w in workloads(model_path) if w.key in wanted]

    # lm-eval: warm its datasets cache (JSON -> Arrow, a one-time cost we do not charge it), then time it.
    print("lm-eval: warming the datasets cache ...", flush=True)
    run_worker(
        [
            RefSpec(
                w.ref.task,
                num_fewshot=w.ref.num_fewshot,
                limit=1,
                apply_chat_template=w.ref.apply_chat_template,
                model_path=w.ref.model_path,
            )
            for w in loads
        ],
        data,
        emit=False,
    )
    print("lm-eval: timing (one subprocess, all workloads) ...", flush=True)
    t0 = time.perf_counter()
    ref = run_worker([w.ref for w in loads], data, full_index=True, emit=False)
    ref_wall = time.perf_counter() - t0
    index_s = ref["timings"]["index_s"]
    index_cpu = ref["timings"]["index_cpu_s"]
    import_s = ref["timings"]["import_s"]

    rows = []
    with tempfile.TemporaryDirectory(prefix="lmeval-bench-") as tmp:
        for w, r in zip(loads, ref["results"], strict=True):
            ov = [*w.overrides, f"run.data_dir={data}", "model=tiny"]
            plan = Path(tmp) / f"{w.key}.msgpack"
            print(f"ours: {w.title} ...", flush=True)
            cli = [ours_cli(ov, plan) for _ in range(args.repeats)]
            size = plan.stat().st_size
            # warm the interpreter (imports, tokenizer) so in-process means compile work only
            ours_inprocess([*ov, "run.limit=1"], Path(tmp) / f"{w.key}-warm.msgpack")
            inproc = []
            n_docs = n_inst = 0
            for _ in range(args.repeats):
                dt, dc, n_docs, n_inst = ours_inprocess(ov, Path(tmp) / f"{w.key}-inproc.msgpack")
                inproc.append((dt, dc))
            t = r["timings"]
            lm_excl = t["load_s"] + t["build_s"]
            lm_excl_cpu = t["load_cpu_s"] + t["build_cpu_s"]
            rows.append(
                {
                    "w": w,
                    "n_docs": n_docs,
                    "n_inst": n_inst,
                    "ref_docs": r["n_docs"],
                    "ref_inst": r["n_instances"],
                    "lm_incl": lm_excl + index_s,
                    "lm_excl": lm_excl,
                    "lm_incl_cpu": lm_excl_cpu + index_cpu,
                    "lm_excl_cpu": lm_excl_cpu,
                    "cli": statistics.median(x[0] for x in cli),
                    "cli_cpu": statistics.median(x[1] for x in cli),
                    "inproc": statistics.median(x[0] for x in inproc),
                    "inproc_cpu": statistics.median(x[1] for x in inproc),
                    "size": size,
                }
            )

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    head = (
        f"# Compile benchmark: lmeval compile vs lm-eval {lmeval_version()} request building\n\n"
        f"Machine: {machine()}; load average at the end: {load}  \n"
        f"Command: `.venv/bin/python bench/compile.py --repeats {args.repeats}` "
        f"(data: `{data}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n"
    )
    lines = [
        "Wall-clock seconds:",
        "",
        "| workload | docs | Instances (ours / lm-eval) | lm-eval incl. indexing | lm-eval excl. indexing | "
        "ours: `lmeval compile` process | ours: in-process | ratio incl. (process) | ratio excl. (process) | "
        "ratio excl. (in-process) | plan size |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        same = "" if (r["n_inst"], r["n_docs"]) == (r["ref_inst"], r["ref_docs"]) else " **(differ)**"
        lines.append(
            f"| {r['w'].title} | {r['n_docs']:,} | {r['n_inst']:,} / {r['ref_inst']:,}{same} | "
            f"{fmt_s(r['lm_incl'])} | {fmt_s(r['lm_excl'])} | {fmt_s(r['cli'])} | {fmt_s(r['inproc'])} | "
            f"{r['lm_incl'] / r['cli']:.1f}× | {r['lm_excl'] / r['cli']:.1f}× | {r['lm_excl'] / r['inproc']:.1f}× | "
            f"{r['size'] / 1e6:.1f} MB |"
        )
    lines += [
        "",
        "CPU seconds (user + system; less sensitive to other load on the machine than wall time):",
        "",
        "| workload | lm-eval incl. indexing | lm-eval excl. indexing | ours: process | ours: in-process | "
        "ratio incl. (process) | ratio excl. (process) | ratio excl. (in-process) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['w'].title} | {fmt_s(r['lm_incl_cpu'])} | {fmt_s(r['lm_excl_cpu'])} | {fmt_s(r['cli_cpu'])} | "
            f"{fmt_s(r['inproc_cpu'])} | {r['lm_incl_cpu'] / r['cli_cpu']:.1f}× | "
            f"{r['lm_excl_cpu'] / r['cli_cpu']:.1f}× | {r['lm_excl_cpu'] / r['inproc_cpu']:.1f}× |"
        )
    notes = (
        f"\nlm-eval: one subprocess for all workloads, wall {fmt_s(ref_wall)}; `import lm_eval.tasks` "
        f"{fmt_s(import_s)} (not counted), `TaskManager()` indexing {fmt_s(index_s)} (counted once per "
        'workload in the "incl." column, as each separate lm-eval run pays it), then per workload '
        "`TaskManager.load` (task construction, datasets from a warm cache) + `build_all_requests`.  \n"
        "Ours: median of the runs; the process time is a whole `lmeval compile` (interpreter start-up, Hydra "
        "composition, data loading, rendering, chat template, token ids for every Instance, hashing, atomic "
        "write); in-process is `compiler.compile_to_file` in a warm interpreter (imports and tokenizer "
        "loaded by a limit=1 compile first).  \n"
        "Ratios: lm-eval time / our time.\n"
    )
    text = head + "\n" + "\n".join(lines) + "\n" + notes
    print()
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
