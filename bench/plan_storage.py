"""Benchmark compressed plan files (format 2) against the uncompressed format 1, same machine, same run.

Two source trees: **old** (``--old-rev``, default ``d4dad0a``: plan format 1, records stored uncompressed),
exported with ``git archive`` into a scratch directory, and **new** (this checkout: zstd frames per task). For
each side, in rounds that alternate old and new (so load on the machine falls on both alike):

- **compile**: ``lmeval compile +task=mmlu run.num_fewshot=5`` as a fresh process (full MMLU, 57 subjects,
  14,042 docs, 56,168 Instances, token ids from the tiny reference model): wall and CPU seconds, plan size.
- **diff**: ``lmeval diff --json`` of that plan and one compiled with a changed anatomy description and
  astronomy few-shot selection (bench/diff.py's pair), both plan hashes verified, as a process; and
  ``lmeval.diff.diff_plans`` in-process (median of 3 in one interpreter).
- **executor start-up**: ``executor.instances.load_instances`` (open, stream, hash-verify and decode every Instance
  of the plan: what ``lmeval execute`` does before the engine starts), in-process, median of 3.

Reports medians over the rounds and new/old ratios (target: within 10%), plus plan sizes, and writes
``bench/results/plan_storage.md``.

    .venv/bin/python bench/plan_storage.py [--rounds 3] [--old-rev d4dad0a] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
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

from bench.diff import COMPILED_OVERRIDES, changed_mmlu_definition  # noqa: E402

INPROC_DIFF = """
import json, sys, time
from lmeval.diff import diff_plans
walls, cpus = [], []
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    r = diff_plans(sys.argv[1], sys.argv[2])
    walls.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
walls.sort(); cpus.sort()
print(json.dumps({"wall": walls[1], "cpu": cpus[1], "tasks": sorted(t.name for t in r.tasks)}))
"""

INPROC_LOAD = """
import json, sys, time
from lmeval.executor.instances import load_instances
walls, cpus = [], []
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    header, insts = load_instances(sys.argv[1], None)
    walls.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
walls.sort(); cpus.sort()
print(json.dumps({"wall": walls[1], "cpu": cpus[1], "n": len(insts)}))
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(tree: Path, args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds and stdout of one ``python ARGS`` process with ``tree`` first on sys.path."""
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    c0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True)
    dt, dc = time.perf_counter() - t0, _children_cpu() - c0
    if p.returncode not in (0, 1):  # lmeval diff exits 1 when the plans differ
        raise RuntimeError(f"{tree}: {' '.join(args)[:200]} failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, dc, p.stdout


def export_tree(rev: str, dest: Path) -> Path:
    """``rev`` of this repository as plain files (git archive), so both formats run side by side."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old-rev", default="d4dad0a")
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "plan_storage.md")
    args = ap.parse_args(argv)
    data = (args.data_dir or Path(os.environ.get("LMEVAL_DATA_DIR", ROOT.parent / "shared" / "data"))).resolve()
    base = [*COMPILED_OVERRIDES, f"run.data_dir={data}"]

    with tempfile.TemporaryDirectory(prefix="bench-plan-storage-") as tmp_s:
        tmp = Path(tmp_s)
        trees = {"old": export_tree(args.old_rev, tmp / "old"), "new": ROOT}
        changed_def = changed_mmlu_definition(tmp / "mmlu_changed.yaml")
        m: dict[str, dict[str, list[float]]] = {s: {} for s in trees}
        sizes: dict[str, int] = {}
        changed: dict[str, Path] = {}
        for side, tree in trees.items():  # the changed plan of each side, once (not timed)
            changed[side] = tmp / f"{side}-changed.msgpack"
            run(
                tree,
                ["-m", "lmeval", "compile", *base, f"task.mmlu.definition={changed_def}", f"run.out={changed[side]}"],
            )
        for r in range(args.rounds):
            for side in ("old", "new") if r % 2 == 0 else ("new", "old"):
                tree, rec = trees[side], m[side]
                plan = tmp / f"{side}.msgpack"
                wall, cpu, _ = run(tree, ["-m", "lmeval", "compile", *base, f"run.out={plan}"])
                rec.setdefault("compile_wall", []).append(wall)
                rec.setdefault("compile_cpu", []).append(cpu)
                sizes[side] = plan.stat().st_size
                wall, cpu, out = run(tree, ["-m", "lmeval", "diff", "--json", str(plan), str(changed[side])])
                names = sorted(t["name"] for t in json.loads(out)["tasks"])
                if names != ["mmlu_anatomy", "mmlu_astronomy"]:
                    raise RuntimeError(f"{side}: diff reported {names}")
                rec.setdefault("diff_cli_wall", []).append(wall)
                rec.setdefault("diff_cli_cpu", []).append(cpu)
                _, _, out = run(tree, ["-c", INPROC_DIFF, str(plan), str(changed[side])])
                d = json.loads(out)
                rec.setdefault("diff_wall", []).append(d["wall"])
                rec.setdefault("diff_cpu", []).append(d["cpu"])
                _, _, out = run(tree, ["-c", INPROC_LOAD, str(plan)])
                d = json.loads(out)
                if d["n"] != 56168:
                    raise RuntimeError(f"{side}: executor loaded {d['n']} Instances")
                rec.setdefault("load_wall", []).append(d["wall"])
                rec.setdefault("load_cpu", []).append(d["cpu"])
                print(f"round {r + 1} {side}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in rec.items()), flush=True)

    rows = [
        ("compile MMLU 5-shot, `lmeval compile` process", "compile"),
        ("diff of two MMLU plans, `lmeval diff --json` process", "diff_cli"),
        ("diff of two MMLU plans, `diff_plans` in-process", "diff"),
        ("executor start-up: `load_instances` (read, verify, decode)", "load"),
    ]
    load = os.getloadavg()
    lines = [
        "# Plan storage benchmark: zstd-compressed plans (format 2) vs uncompressed (format 1)",
        "",
        f"Machine: {platform.machine()}, nproc {os.cpu_count()}, {cpu_model()}, Python {platform.python_version()}; "
        f"load average at the end: {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}  ",
        f"Command: `.venv/bin/python bench/plan_storage.py --rounds {args.rounds} --old-rev {args.old_rev}` "
        f"(data: `{data}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        f"Plan size, full MMLU 5-shot (57 subjects, 14,042 docs, 56,168 Instances): old {sizes['old'] / 1e6:.1f} MB, "
        f"**new {sizes['new'] / 1e6:.2f} MB** ({sizes['old'] / sizes['new']:.1f}× smaller; target ≤ 12 MB).",
        "",
        f"Medians of {args.rounds} rounds, old and new alternating within each round (seconds; ratio new/old, "
        "target ≤ 1.10):",
        "",
        "| measurement | old wall | new wall | ratio wall | old CPU | new CPU | ratio CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for title, key in rows:
        ow, nw = med(m["old"][f"{key}_wall"]), med(m["new"][f"{key}_wall"])
        oc, nc = med(m["old"][f"{key}_cpu"]), med(m["new"][f"{key}_cpu"])
        lines.append(f"| {title} | {ow:.2f} | {nw:.2f} | {nw / ow:.2f} | {oc:.2f} | {nc:.2f} | {nc / oc:.2f} |")
    lines += [
        "",
        "Per round (wall seconds): "
        + "; ".join(
            f"{side} {key} " + "/".join(f"{x:.2f}" for x in m[side][f"{key}_wall"])
            for key in ("compile", "diff_cli", "diff", "load")
            for side in ("old", "new")
        ),
        "",
        "Both diffs report exactly mmlu_anatomy and mmlu_astronomy. CPU is user+system of the process (children "
        "for the CLI rows; the in-process rows count every thread, so work moved to a second core still counts). "
        "The new diff checks both plan hashes in one pass, decompressing a frame stored identically in both plans "
        "once; the new reader hashes on a second thread while it decodes.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
