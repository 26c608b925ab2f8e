"""A sensitivity sweep on SmolLM2 (issue #38): how much of arc_easy's score is the prompt.

    .venv/bin/python bench/sweep.py [--limit 50] [--num-fewshot 5] [--backend hf]

One ``lmeval run +task=arc_easy@sweep`` with ``run.sweep`` = 3 formats (cf, mcf, gen) x 3 label styles
(letters, parens, numbers) x 3 few-shot seeds (1234, 1, 2): 21 variants in one plan (cf has no labels:
3 + 9 + 9), executed on SmolLM2-135M-Instruct (``model=smollm2``), the first ``--limit`` documents. Printed and
written to ``bench/results/sweep-smollm2.md``: each variant's score on its ``format.metric`` with its stderr,
the spread the ``arc_easy@sweep`` group reports (min, max, range, mean, sample std and where they fall),
the spread within each format, the instances against the distinct requests executed, the machine and the
wall time. Values, not a speed claim.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from execute import ENV, machine, run  # noqa: E402  (bench/ is sys.path[0])

DATA = (REPO / ".." / "shared" / "data").resolve()
SWEEP = "{formats: [cf, mcf, gen], labels: [letters, parens, numbers], seeds: [1234, 1, 2]}"
_EXECUTED = re.compile(r"executed (\d+) instances \((\d+) requests\)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="arc_easy")
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--num-fewshot", type=int, default=5)
    ap.add_argument("--backend", default="hf")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "sweep-smollm2.md"))
    a = ap.parse_args()
    start = machine()
    with tempfile.TemporaryDirectory(prefix="lmeval-sweep-") as tmp:
        out = Path(tmp) / "results"
        cmd = [
            str(REPO / ".venv" / "bin" / "lmeval"),
            "run",
            f"+task={a.task}@sweep",
            f"run.sweep={SWEEP}",
            f"run.data_dir={DATA}",
            f"run.limit={a.limit}",
            f"run.num_fewshot={a.num_fewshot}",
            "model=smollm2",
            f"model.backend={a.backend}",
            "--out",
            str(out),
            "--no-progress",
        ]
        wall, _ = run(cmd, REPO, {**os.environ, **ENV}, Path(tmp) / "run.log")
        doc = json.loads((out / "results.json").read_text())
        executed = _EXECUTED.search((Path(tmp) / "run.log").read_text())
    end = machine()
    text = _page(
        doc, f"{a.task}@sweep", a, start, end, wall, executed, " ".join(cmd[1:]).replace(str(DATA), "../shared/data")
    )
    Path(a.out).write_text(text)
    print(text)


def variants(doc: dict[str, Any], group: str) -> list[dict[str, Any]]:
    """Each member of the sweep group: its name, format record and score on its ``format.metric``."""
    out = []
    for name in doc["group_subtasks"][group]:
        fmt = doc["configs"][name]["format"]
        key = fmt["metric"]
        metric, _, filt = key.partition(",")
        res = doc["results"][name]
        out.append(
            {
                "name": name,
                "format": fmt["name"],
                "labels": fmt.get("labels", "-"),
                "seed": fmt.get("seed", "run's"),
                "metric": key,
                "value": res[key],
                "stderr": res.get(f"{metric}_stderr,{filt}"),
            }
        )
    return out


def _f(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else str(x)


def _page(
    doc: dict[str, Any],
    group: str,
    a: Any,
    start: dict[str, str],
    end: dict[str, str],
    wall: float,
    executed: re.Match[str] | None,
    cmd: str,
) -> str:
    rows = variants(doc, group)
    s = doc["results"][group]
    lines = [
        f"# A prompt sensitivity sweep of SmolLM2-135M-Instruct on {a.task} (issue #38)",
        "",
        f"Machine: {start['arch']}, {start['nproc']} cores, {start['cpu']}; load average at start {start['load']}, "
        f"at end {end['load']}. One plan, {len(rows)} variants, {a.num_fewshot}-shot, the first {a.limit} "
        f"documents, backend {a.backend}; {wall:.0f} s from process start to scores."
        + (f" {executed.group(1)} instances, {executed.group(2)} distinct requests executed." if executed else ""),
        "",
        "| variant | format | labels | few-shot seed | metric | score | stderr |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['format']} | {r['labels']} | {r['seed']} | {r['metric']} | "
            f"{_f(r['value'])} | {_f(r['stderr'])} |"
        )
    lines += [
        "",
        f"Spread (group `{group}`): min {_f(s['spread_min,none'])} ({s['spread_argmin']}), max "
        f"{_f(s['spread_max,none'])} ({s['spread_argmax']}), range {_f(s['spread_range,none'])}, mean "
        f"{_f(s['spread_mean,none'])}, sample std {_f(s['spread_std,none'])} over {s['spread_n']} variants.",
        "",
        "| format | variants | min | max | range | sample std |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for fmt in ("cf", "mcf", "gen"):
        vals = [r["value"] for r in rows if r["format"] == fmt]
        if vals:
            std = statistics.stdev(vals) if len(vals) > 1 else "N/A"
            lines.append(
                f"| {fmt} | {len(vals)} | {_f(min(vals))} | {_f(max(vals))} | {_f(max(vals) - min(vals))} | {_f(std)} |"
            )
    lines += ["", f"Command: `{cmd}`", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
