"""Benchmark the bill before the run (#63 acceptance 4): ``lmeval show PLAN --estimate model=smollm2`` against
the run it predicts, on arc_challenge 25-shot (the first ``--limit`` test documents) with SmolLM2-135M on vLLM.

Three steps, each a fresh process: compile; ``show --estimate model=smollm2`` (the token estimate, and the time
from a calibration slice of ``--slice-docs`` documents of the plan on this machine's engine); ``execute``. Then
the estimate against the manifest: predicted tokens to compute against the backend's ``computed_tokens`` (equal),
predicted time against the run's engine time (scoring + generation, model load excluded on both sides; within
30%). The load average is recorded at each step: on a shared machine other work slows one side and not the other.

    .venv/bin/python bench/estimate.py [--limit 40] [--slice-docs 4]

Writes ``bench/results/estimate-smollm2.md``; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.machine_info import cpu_flags, cpu_model  # noqa: E402

DATA = Path(os.environ.get("LMEVAL_DATA_DIR") or (REPO / ".." / "shared" / "data")).resolve()
ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}  # fmt: skip
TOLERANCE = 0.30


def lmeval(*args: str, cwd: Path) -> str:
    p = subprocess.run([sys.executable, "-m", "lmeval", *args], cwd=cwd, env=ENV, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"lmeval {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    return p.stdout + p.stderr


def field(text: str, name: str, pattern: str) -> str:
    m = re.search(rf"^{name}\s+{pattern}", text, re.M)
    if m is None:
        sys.exit(f"no {name!r} line in:\n{text}")
    return m.group(1)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--slice-docs", type=int, default=4)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "estimate-smollm2.md"))
    args = ap.parse_args()
    loads = {"start": load()}
    with tempfile.TemporaryDirectory(prefix="lmeval-estimate-") as tmp:
        work = Path(tmp)
        overrides = ["+task=arc_challenge", "model=smollm2", "run.num_fewshot=25", f"run.limit={args.limit}",
                     f"run.data_dir={DATA}"]  # fmt: skip
        lmeval("compile", *overrides, "--out", str(work / "plan.msgpack"), cwd=work)
        plan = str(work / "plan.msgpack")
        t = time.monotonic()
        shown = lmeval("show", plan, "--estimate", "model=smollm2", "--slice-docs", str(args.slice_docs), cwd=work)
        estimate_wall = time.monotonic() - t
        loads["after estimate"] = load()
        t = time.monotonic()
        lmeval("execute", plan, "model=smollm2", "--out", str(work / "results"), "--no-progress", cwd=work)
        run_wall = time.monotonic() - t
        loads["after run"] = load()
        manifest = json.loads((work / "results" / "manifest.json").read_text())
    predicted_tokens = int(field(shown, "tokens to compute", r"(\d+)"))
    predicted_s = float(field(shown, "time", r"([\d.]+)s"))
    calibration = field(shown, "calibration", r"(.*)$")
    stats = manifest["stats"]
    computed = int(stats["computed_tokens"])
    measured_s = (stats["scoring_ms"] + stats["generation_ms"]) / 1000
    error = (predicted_s - measured_s) / measured_s
    ok_tokens, ok_time = predicted_tokens == computed, abs(error) <= TOLERANCE
    rows = [
        ("tokens to compute", f"{predicted_tokens}", f"{computed}", "equal" if ok_tokens else "DIFFER"),
        ("engine time (s)", f"{predicted_s:.1f}", f"{measured_s:.1f}",
         f"{error:+.1%} ({'within' if ok_time else 'OUTSIDE'} {TOLERANCE:.0%})"),
        ("prefix-cache hits (scoring prompt tokens)", "", f"{stats.get('cached_prompt_tokens', 0)}", ""),
        ("requests", field(shown, "requests", r"(\d+)"), f"{stats['requests']}", ""),
    ]  # fmt: skip
    text = "\n".join([
        "# The bill before the run: `lmeval show --estimate` against the run (SmolLM2-135M, vLLM, CPU)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {cpu_model()} (flags: {cpu_flags()}); load average "
        f"(1, 5, 15 min) at start {loads['start']}, after the estimate {loads['after estimate']}, after the run "
        f"{loads['after run']}.",
        f"Plan: arc_challenge 25-shot, the first {args.limit} test documents. Estimate: `lmeval show PLAN --estimate "
        f"model=smollm2 --slice-docs {args.slice_docs}` ({estimate_wall:.0f} s wall, engine start included); "
        f"{calibration}. Run: `lmeval execute` ({run_wall:.0f} s wall); its time is the manifest's scoring + "
        "generation time (model load excluded, as in the estimate).",
        "",
        "| figure | estimate | run | |",
        "|---|---:|---:|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
        "The estimate's full output:",
        "",
        "```",
        *[ln for ln in shown.strip().splitlines()],
        "```",
        "",
    ])  # fmt: skip
    Path(args.out).write_text(text)
    print(text)
    return 0 if ok_tokens and ok_time else 1


if __name__ == "__main__":
    raise SystemExit(main())
