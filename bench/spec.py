"""Benchmark the JSONL task spec front end on a generated 100,000-line spec (issue #6, acceptance 2).

Targets: validate in under 5 s, compile in under 20 s. Measured:
- ``validate_file`` in-process, and the whole ``lmeval validate`` process (interpreter start included);
- ``load_spec_task`` (validation + docs + rendered prompts: the spec front end's share of a compile);
- ``lmeval compile +task=jsonl task.jsonl.path=...`` as a process, when the compiler core accepts spec tasks
  (otherwise reported as not available, with its error).

The spec is generated from a fixed seed: 20,000 tasks per category, about a third with few-shot examples.
Wall and CPU times both depend on how fast the (shared, virtual) machine is at the moment: the process
steps run ``--repeats`` times (median reported, every run listed) and a fixed pure-Python loop is timed
beside them. Prints a table and writes ``bench/results/spec.md``.

    .venv/bin/python bench/spec.py [--lines N] [--skip-compile] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

from lmeval.compiler import load_spec_task, validate_file  # noqa: E402

VALIDATE_TARGET_S = 5.0
COMPILE_TARGET_S = 20.0
WORDS = """the of and to in is it that was for on are with as be at by this from or had not but what all were when
we there can an your which their said if do will each about how up out them then she many some so these would
other into has more her two like him see time could no make than first been its who now people my made over did
down only way find use may water long little very after words called just where most know""".split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_task(i: int, rng: random.Random) -> dict[str, Any]:
    category = ("arithmetic", "mcq", "code_exec", "classification", "summary")[i % 5]
    if category == "arithmetic":
        a, b = rng.randint(1, 999), rng.randint(1, 999)
        rec = {
            "prompt": f"Question: What is {a} + {b}?\nAnswer:",
            "targets": [str(a + b)],
            "metric_name": "exact_match",
            "post_process": "strip_whitespace",
        }
        shots = [{"prompt": f"Question: What is {k} + {k}?\nAnswer:", "completion": str(2 * k)} for k in (1, 2, 3)]
    elif category == "mcq":
        options = "\n".join(f"{x}. {_sentence(rng, 3)}" for x in "ABCD")
        rec = {
            "prompt": f"{_sentence(rng, 12)}\n{options}\nAnswer:",
            "targets": [rng.choice("ABCD")],
            "metric_name": "exact_match",
            "post_process": "extract_letter",
        }
        shots = [{"prompt": f"{_sentence(rng, 8)}\n{options}\nAnswer:", "completion": "A"} for _ in range(5)]
    elif category == "code_exec":
        rec = {
            "prompt": f"Write a Python function f{i}(x) that returns x * {i % 7}.",
            "targets": [f"assert f{i}(2) == {2 * (i % 7)}", f"assert f{i}(0) == 0"],
            "metric_name": "code_exec",
            "post_process": "extract_code_block",
        }
        shots = []
    elif category == "classification":
        rec = {
            "prompt": f"Review: {_sentence(rng, 20)}\nSentiment:",
            "targets": [rng.choice(["positive", "negative"])],
            "metric_name": "accuracy",
            "post_process": "lower",
        }
        shots = [{"prompt": f"Review: {_sentence(rng, 15)}\nSentiment:", "completion": "positive"}]
    else:
        rec = {
            "prompt": f"Summarize: {' '.join(_sentence(rng, 15) for _ in range(4))}\nSummary:",
            "targets": [_sentence(rng, 10), _sentence(rng, 8)],
            "metric_name": "rouge_l",
            "post_process": "strip_whitespace",
        }
        shots = []
    out: dict[str, Any] = {"task_id": f"{category}-{i:06d}", "category": category, **rec}
    if shots and i % 3 == 0:
        out["few_shot_examples"] = shots
    if i % 4 == 0:
        out["metadata"] = {"source": "bench", "n": i}
    return out


def write_spec(path: Path, n: int) -> None:
    rng = random.Random(0)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(make_task(i, rng)) + "\n")


def machine() -> str:
    cpu = cpu_model()
    return f"{platform.machine()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def _timed_process(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds (user + system of the child), and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def calibrate() -> float:
    """Seconds for a fixed pure-Python loop: how fast this machine is right now."""
    t = time.perf_counter()
    total = 0
    for i in range(20_000_000):
        total += i
    return time.perf_counter() - t


def _median_run(
    runs: list[tuple[float, float, subprocess.CompletedProcess[str]]],
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    return sorted(runs, key=lambda r: r[0])[len(runs) // 2]


def _walls(runs: list[tuple[float, float, subprocess.CompletedProcess[str]]]) -> str:
    return ", ".join(f"{r[0]:.1f}" for r in runs) + " s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="process runs per step (the median is reported)")
    args = ap.parse_args()
    calibration = [calibrate()]

    rows: list[tuple[str, float | None, float | None, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "tasks.jsonl"
        t = time.perf_counter()
        write_spec(spec, args.lines)
        gen_s = time.perf_counter() - t
        size_mb = spec.stat().st_size / 1e6

        t, cpu = time.perf_counter(), time.process_time()
        report = validate_file(spec)
        rows.append(
            (
                "validate_file (in-process)",
                time.perf_counter() - t,
                VALIDATE_TARGET_S,
                f"{len(report.records)} valid, {len(report.issues)} errors; CPU {time.process_time() - cpu:.2f} s",
            )
        )

        lmeval = [sys.executable, "-m", "lmeval"]
        runs = [_timed_process([*lmeval, "validate", str(spec)]) for _ in range(args.repeats)]
        secs, cpu, proc = _median_run(runs)
        summary = proc.stdout.strip().splitlines()[-1][len(str(spec)) + 2 :]
        note = f"exit {proc.returncode}: {summary}; CPU {cpu:.2f} s; runs {_walls(runs)}"
        rows.append(("lmeval validate (process)", secs, VALIDATE_TARGET_S, note))

        t, cpu = time.perf_counter(), time.process_time()
        task = load_spec_task(str(spec), allow_bad_tasks=False)
        rows.append(
            (
                "load_spec_task (in-process)",
                time.perf_counter() - t,
                COMPILE_TARGET_S,
                f"{len(task.docs)} docs; CPU {time.process_time() - cpu:.2f} s",
            )
        )

        if not args.skip_compile:
            out = Path(tmp) / "plan.msgpack"
            cmd = [*lmeval, "compile", "+task=jsonl", f"task.jsonl.path={spec}", "--out", str(out)]
            runs = []
            for _ in range(args.repeats):
                calibration.append(calibrate())
                runs.append(_timed_process(cmd))
            secs, cpu, proc = _median_run(runs)
            if proc.returncode == 0 and out.exists():
                note = f"plan {out.stat().st_size / 1e6:.1f} MB; CPU {cpu:.2f} s; runs {_walls(runs)}"
                rows.append(("lmeval compile (process)", secs, COMPILE_TARGET_S, note))
            else:
                err = (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
                rows.append(("lmeval compile (process)", None, COMPILE_TARGET_S, f"not available: {err}"))

    lines = [
        f"# JSONL spec benchmark: {args.lines:,} lines ({size_mb:.1f} MB, generated in {gen_s:.1f} s)",
        "",
        f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.1f}",
        "",
        f"Process steps: median of {args.repeats} runs. This machine's speed drifts by up to half from minute to "
        f"minute; a fixed pure-Python loop (`calibrate()`) took {min(calibration):.2f}-{max(calibration):.2f} s "
        "before the runs of this benchmark (lower is faster).",
        "",
        "| step | time (s) | target (s) | time / target | note |",
        "|---|---:|---:|---:|---|",
    ]
    for name, took, target, note in rows:
        if took is None or target is None:
            lines.append(f"| {name} | - | {target} | - | {note} |")
        else:
            ok = "ok" if took < target else "OVER"
            lines.append(f"| {name} | {took:.2f} | {target:.0f} | {took / target:.2f} ({ok}) | {note} |")
    text = "\n".join(lines) + "\n"
    print(text)
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "spec.md").write_text(text, encoding="utf-8")
    print(results / "spec.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
