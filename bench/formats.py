"""SmolLM2 in every prompt format (issue #38): which format this model reads.

    .venv/bin/python bench/formats.py [--limit 100] [--num-fewshot 5] [--mmlu-subjects 5] [--backend hf]

One ``lmeval run`` compiles every shipped multiple-choice task (arc_easy, arc_challenge, piqa, winogrande,
boolq and the first N MMLU subjects) in each format (``@cf``, ``@mcf``, ``@gen``: compiler/formats) into one
plan and executes it on SmolLM2-135M-Instruct (``model=smollm2``): the first ``--limit`` documents of each
task, ``--num-fewshot`` shots. Printed and written to ``bench/results/formats-smollm2.md``: per task, CF
``acc`` and ``acc_norm``, MCF ``acc``, gen ``exact_match`` with its unparsed count (responses the label regex
does not match), chance level, and the better of CF and MCF (OLMES' rule), with the machine and the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from execute import ENV, machine, run  # noqa: E402  (bench/ is sys.path[0])

DATA = (REPO / ".." / "shared" / "data").resolve()
TASKS = ["arc_easy", "arc_challenge", "piqa", "winogrande", "boolq"]
CHANCE = {"arc_easy": 0.25, "arc_challenge": 0.25, "piqa": 0.5, "winogrande": 0.5, "boolq": 0.5}


def mmlu_subjects(n: int) -> list[str]:
    return sorted(p.name for p in (DATA / "mmlu").iterdir() if p.is_dir())[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--num-fewshot", type=int, default=5)
    ap.add_argument("--mmlu-subjects", type=int, default=5)
    ap.add_argument("--backend", default="hf")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "formats-smollm2.md"))
    a = ap.parse_args()
    bases = TASKS + [f"mmlu_{s}" for s in mmlu_subjects(a.mmlu_subjects)]
    names = [f"{b}@{f}" for b in bases for f in ("cf", "mcf", "gen")]
    start = machine()
    with tempfile.TemporaryDirectory(prefix="lmeval-formats-") as tmp:
        out = Path(tmp) / "results"
        cmd = [str(REPO / ".venv" / "bin" / "lmeval"), "run", f"run.tasks=[{','.join(names)}]",
               f"run.data_dir={DATA}", f"run.limit={a.limit}", f"run.num_fewshot={a.num_fewshot}", "model=smollm2",
               f"model.backend={a.backend}", "--out", str(out), "--no-progress"]  # fmt: skip
        t = time.monotonic()
        run(cmd, REPO, {**os.environ, **ENV}, Path(tmp) / "run.log")
        wall = time.monotonic() - t
        results = json.loads((out / "results.json").read_text())["results"]
        unparsed = _unparsed(out)
    end = machine()
    rows = [_row(b, results, unparsed) for b in bases]
    text = _table(rows, a, start, end, wall, " ".join(cmd[1:]).replace(str(DATA), "../shared/data"))
    Path(a.out).write_text(text)
    print(text)


def _unparsed(out: Path) -> dict[str, int]:
    import polars as pl

    s = pl.read_parquet(out / "samples.parquet").filter(pl.col("filter") == "letter")
    counts = s.group_by("task").agg((pl.col("filtered") == "[invalid]").sum().alias("n"))
    return {str(t): int(n) for t, n in counts.iter_rows()}


def _row(base: str, results: dict[str, Any], unparsed: dict[str, int]) -> dict[str, Any]:
    cf, mcf, gen = (results.get(f"{base}@{f}", {}) for f in ("cf", "mcf", "gen"))
    return {
        "task": base,
        "chance": CHANCE.get(base, 0.25),
        "cf_acc": cf.get("acc,none"),
        "cf_acc_norm": cf.get("acc_norm,none"),
        "mcf_acc": mcf.get("acc,none"),
        "gen_em": gen.get("exact_match,letter"),
        "gen_unparsed": unparsed.get(f"{base}@gen", 0),
        "best": max(
            ("cf", cf.get("acc_norm,none", cf.get("acc,none")) or 0.0),
            ("mcf", mcf.get("acc,none") or 0.0),
            key=lambda x: x[1],
        ),  # fmt: skip
    }


def _f(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


def _table(
    rows: list[dict[str, Any]], a: Any, start: dict[str, str], end: dict[str, str], wall: float, cmd: str
) -> str:
    lines = [
        "# SmolLM2-135M-Instruct in every prompt format (issue #38)",
        "",
        f"Machine: {start['arch']}, {start['nproc']} cores, {start['cpu']}; load average at start {start['load']}, "
        f"at end {end['load']}. One plan, {len(rows) * 3} tasks, {a.num_fewshot}-shot, first {a.limit} documents "
        f"of each task, backend {a.backend}; {wall:.0f} s from process start to scores.",
        "",
        "| task | chance | CF acc | CF acc_norm | MCF acc | gen exact_match (unparsed) | better of CF / MCF |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['chance']:.2f} | {_f(r['cf_acc'])} | {_f(r['cf_acc_norm'])} | {_f(r['mcf_acc'])} | "
            f"{_f(r['gen_em'])} ({r['gen_unparsed']}) | {r['best'][0]} {_f(r['best'][1])} |"
        )
    lines += ["", f"Command: `{cmd}`", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
