"""Benchmark ``lmeval compile`` against lm-eval 0.4.13's request building, same tasks, same data, same run.

Workloads: full MMLU 5-shot (57 subjects, 14,042 docs), ARC-Challenge 25-shot (1,172 docs) and
gsm8k_cot_llama with the tiny model's chat template (1,319 docs, 8-shot multiturn).

- **ours**: ``lmeval compile ... run.out=PLAN`` as a fresh process (what a user waits for: start-up, Hydra,
  data, rendering, token ids, hashing, writing), CPU counted over the process and its workers:
  *cold* (``--no-cache``: every task built, on ``--jobs`` workers, default the number of CPUs), *cold, serial*
  (``--no-cache -j 1``), *warm* (the build cache holds every task: nothing changed) and, for MMLU, *one subject
  changed* (one document of abstract_algebra edited in a data folder whose other 56 subjects are links to the
  reference data: 57 tasks, 1 built). The cache is a fresh folder (``LMEVAL_BUILD_CACHE_DIR``) per run. Median
  of ``--repeats`` runs. Every plan carries token ids (``model=tiny``); all plans of a workload are checked to
  be byte-identical (the edited one aside).
- **lm-eval**: its own subprocess (``tests/parity/lmeval_reference.py``: offline, local JSONL, scratch
  HF_HOME): ``TaskManager()`` (indexing all built-in task folders), ``TaskManager.load`` (task construction
  and dataset loading from the datasets cache, warmed first), then ``set_fewshot_seed`` +
  ``build_all_requests`` per task as ``lm_eval.evaluator`` does. Reported with and without the indexing.

Ratios are lm-eval time / our time (higher is better for us; issue #30's target for cold MMLU: ≥ 20× in CPU
time). Also checks both sides build the same number of Instances. Writes ``bench/results/compile.md``.

    .venv/bin/python bench/compile.py [--repeats 3] [--data-dir DIR] [--only mmlu,arc,gsm8k] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
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

from lmeval.plans.plan import PlanReader  # noqa: E402
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


def ours_cli(overrides: list[str], out: Path, flags: list[str], cache: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one ``lmeval compile`` process (its worker processes included)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", LMEVAL_BUILD_CACHE="1")
    env.pop("LMEVAL_COMPILE_JOBS", None)
    if cache is not None:
        env["LMEVAL_BUILD_CACHE_DIR"] = str(cache)
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "lmeval", "compile", *flags, *overrides, f"run.out={out}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    dt, dc = time.perf_counter() - t0, _children_cpu() - c0
    if p.returncode != 0 or p.stdout.strip().splitlines()[-1] != str(out):
        raise RuntimeError(f"lmeval compile {' '.join(overrides)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, dc


def edited_data(data: Path, tmp: Path) -> Path:
    """A data folder whose mmlu subjects are links to ``data``'s, but abstract_algebra's first test document
    edited (its question gets a suffix): one MMLU task changes, 56 keep their build-cache keys."""
    import json

    root = tmp / "data-edited"
    (root / "mmlu").mkdir(parents=True)
    for sub in sorted((data / "mmlu").iterdir()):
        if sub.name != "abstract_algebra":
            (root / "mmlu" / sub.name).symlink_to(sub.resolve())
    dst = root / "mmlu" / "abstract_algebra"
    shutil.copytree(data / "mmlu" / "abstract_algebra", dst)
    lines = (dst / "test.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["question"] = row["question"] + " (edited)"
    lines[0] = json.dumps(row)
    (dst / "test.jsonl").write_text("\n".join(lines) + "\n")
    return root


def fmt_s(x: float) -> str:
    return f"{x:.2f} s" if x < 100 else f"{x:.0f} s"


def _median(xs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)


def measure(w: Workload, data: Path, tmp: Path, repeats: int, jobs: list[str]) -> dict[str, object]:
    """Every mode of ours for one workload; checks the plans agree byte for byte."""
    ov = [*w.overrides, f"run.data_dir={data}", "model=tiny"]
    plans: dict[str, bytes] = {}
    out: dict[str, object] = {}

    def runs(mode: str, flags: list[str], cache: Path | None, fresh: bool, overrides: list[str] = ov) -> None:
        got = []
        for i in range(repeats):
            c = cache
            if fresh and cache is not None:
                c = cache.with_name(f"{cache.name}-{i}")
            plan = tmp / f"{w.key}-{mode}-{i}.msgpack"
            got.append(ours_cli(overrides, plan, flags, c))
            plans[mode] = plan.read_bytes()
        out[mode] = _median(got)

    print(f"ours: {w.title}: cold ...", flush=True)
    runs("cold", ["--no-cache", *jobs], None, False)
    runs("cold_serial", ["--no-cache", "-j", "1"], None, False)
    cache = tmp / f"{w.key}-cache"
    print(f"ours: {w.title}: cold, filling a fresh cache ...", flush=True)
    runs("cold_fill", jobs, cache, True)
    print(f"ours: {w.title}: warm ...", flush=True)
    runs("warm", jobs, cache.with_name(f"{cache.name}-0"), False)
    if w.key == "mmlu":
        print(f"ours: {w.title}: one subject changed ...", flush=True)
        edited = edited_data(data, tmp)
        ov_e = [*w.overrides, f"run.data_dir={edited}", "model=tiny"]
        got = []
        for i in range(repeats):  # each run starts from a copy of the warm cache (the edit is a miss every time)
            c = tmp / f"{w.key}-cache-one-{i}"
            shutil.copytree(cache.with_name(f"{cache.name}-0"), c)
            plan = tmp / f"{w.key}-one-{i}.msgpack"
            got.append(ours_cli(ov_e, plan, jobs, c))
        out["one_changed"] = _median(got)
        if plan.read_bytes() == plans["cold"]:
            raise RuntimeError("the edited subject did not change the plan")
    first = plans["cold"]
    for mode, b in plans.items():
        if b != first:
            raise RuntimeError(f"{w.title}: the {mode} plan differs from the cold one")
    out["size"] = len(first)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--only", default="mmlu,arc,gsm8k")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: lmeval's, the CPU count)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "compile.md")
    args = ap.parse_args(argv)

    from lmeval.common.tinymodel import ensure_tiny_model

    model_path = str(ensure_tiny_model())
    data = (args.data_dir or default_data_dir()).resolve()
    wanted = set(args.only.split(","))
    loads = [w for w in workloads(model_path) if w.key in wanted]
    jobs = ["-j", str(args.jobs)] if args.jobs else []
    workers = args.jobs or os.cpu_count() or 1
    load_start = ", ".join(f"{x:.1f}" for x in os.getloadavg())

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
            m = measure(w, data, Path(tmp), args.repeats, jobs)
            with PlanReader(Path(tmp) / f"{w.key}-cold-0.msgpack", verify=False) as reader:
                n_docs, n_inst = reader.header.n_docs, reader.header.n_instances
            t = r["timings"]
            rows.append(
                {
                    "w": w,
                    "n_docs": n_docs,
                    "n_inst": n_inst,
                    "ref_docs": r["n_docs"],
                    "ref_inst": r["n_instances"],
                    "lm": t["load_s"] + t["build_s"],
                    "lm_cpu": t["load_cpu_s"] + t["build_cpu_s"],
                    **m,
                }
            )

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    head = (
        f"# Compile benchmark: lmeval compile vs lm-eval {lmeval_version()} request building\n\n"
        f"Machine: {machine()}; load average (1, 5, 15 min) at the start: {load_start}, at the end: {load}  \n"
        f"Command: `.venv/bin/python bench/compile.py --repeats {args.repeats} --only {args.only}"
        f"{' --jobs ' + str(args.jobs) if args.jobs else ''}` "
        f"(data: `{data}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); "
        f"lmeval workers: {workers}\n"
    )
    lines = [
        "CPU seconds (user + system, the process and its workers; less sensitive to other load than wall time) "
        "and wall seconds, ours as a whole `lmeval compile` process:",
        "",
        "| workload | docs | Instances (ours / lm-eval) | lm-eval CPU (wall) | cold CPU (wall) | ratio, CPU | "
        "cold serial CPU (wall) | warm CPU (wall) | one subject changed CPU (wall) | plan size |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cw(x: object) -> str:
        if not isinstance(x, tuple):
            return "–"
        return f"{fmt_s(x[1])} ({fmt_s(x[0])})"

    for r in rows:
        same = "" if (r["n_inst"], r["n_docs"]) == (r["ref_inst"], r["ref_docs"]) else " **(differ)**"
        cold = r["cold"]
        assert isinstance(cold, tuple)
        lines.append(
            f"| {r['w'].title} | {r['n_docs']:,} | {r['n_inst']:,} / {r['ref_inst']:,}{same} | "
            f"{fmt_s(r['lm_cpu'])} ({fmt_s(r['lm'])}) | {cw(cold)} | {r['lm_cpu'] / cold[1]:.1f}× | "
            f"{cw(r['cold_serial'])} | {cw(r['warm'])} | {cw(r.get('one_changed'))} | {r['size'] / 1e6:.1f} MB |"
        )
    notes = (
        f"\nlm-eval: one subprocess for all workloads, wall {fmt_s(ref_wall)}; `import lm_eval.tasks` "
        f"{fmt_s(import_s)} and `TaskManager()` indexing {fmt_s(index_s)} ({fmt_s(index_cpu)} CPU) not counted; "
        "per workload `TaskManager.load` (task construction, datasets from a warm cache) + `build_all_requests`.  \n"
        "Ours: median of the runs; cold = `--no-cache`; warm = every task from the build cache; one subject "
        "changed = 56 tasks from the cache, 1 built. Ratio: lm-eval CPU / our cold CPU.\n"
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
