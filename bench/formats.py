"""SmolLM2 in every prompt format (issue #38): which format this model reads.

    .venv/bin/python bench/formats.py [--limit 100] [--num-fewshot 5] [--mmlu-subjects 5] [--backend hf]

One ``lmeval run`` compiles every shipped multiple-choice task (arc_easy, arc_challenge, piqa, winogrande,
boolq and the first N MMLU subjects) in each format (``@cf``, ``@mcf``, ``@gen``: compiler/formats) into one
plan and executes it on SmolLM2-135M-Instruct (``model=smollm2``): the first ``--limit`` documents of each
task, ``--num-fewshot`` shots. Printed and written to ``bench/results/formats-smollm2.md``: per task, CF
``acc``, ``acc_norm``, ``acc_per_token`` and ``acc_pmi``, MCF ``acc``, gen ``exact_match`` with its unparsed
count (responses the label regex does not match) and its agreement with MCF's argmax label, chance level, and
the better of CF (OLMES' normalisation for the task) and MCF (OLMES' rule), with the machine and the wall time.
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
        agree = _agreement(out)
    end = machine()
    rows = [_row(b, results, unparsed, agree) for b in bases]
    text = _table(rows, a, start, end, wall, " ".join(cmd[1:]).replace(str(DATA), "../shared/data"))
    Path(a.out).write_text(text)
    print(text)


def _unparsed(out: Path) -> dict[str, int]:
    import polars as pl

    s = pl.read_parquet(out / "samples.parquet").filter(pl.col("filter") == "letter")
    counts = s.group_by("task").agg((pl.col("filtered") == "[invalid]").sum().alias("n"))
    return {str(t): int(n) for t, n in counts.iter_rows()}


def _agreement(out: Path) -> dict[str, float]:
    """Per base task: the share of documents whose generated label (``@gen``) is the label MCF scores highest
    (``@mcf``'s argmax over the labels' log-likelihoods): 1.0 means greedy generation is MCF read another way."""
    import polars as pl

    from lmeval.plans.results.manifest import read_results

    rows = read_results(out).select("task", "doc_id", "idx", "loglikelihood")
    mcf = (
        rows.filter(pl.col("task").str.ends_with("@mcf"))
        .sort("loglikelihood", descending=True, maintain_order=True)
        .sort(["task", "doc_id", "idx"])
        .group_by("task", "doc_id", maintain_order=True)
        .agg(pl.col("idx").get(pl.col("loglikelihood").arg_max()).alias("best"))
        .with_columns(base=pl.col("task").str.replace(r"@mcf$", ""))
    )
    gen = (
        pl.read_parquet(out / "samples.parquet")
        .filter(pl.col("filter") == "letter")
        .select("task", "doc_id", "filtered")
        .with_columns(base=pl.col("task").str.replace(r"@gen$", ""))
    )
    j = mcf.join(gen, on=["base", "doc_id"], how="inner")
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    same = j.with_columns(
        ok=pl.col("best").map_elements(lambda i: letters[i], return_dtype=pl.String) == pl.col("filtered")
    )
    return {str(b): float(m) for b, m in same.group_by("base").agg(pl.col("ok").mean()).iter_rows()}


def _cf_metric(base: str) -> str:
    from lmeval.compiler.formats import ADAPTERS

    ad = ADAPTERS.get(base)
    return ad.cf_metric if ad is not None else "acc_norm"  # mmlu and derived adapters: per character


def _row(base: str, results: dict[str, Any], unparsed: dict[str, int], agree: dict[str, float]) -> dict[str, Any]:
    cf, mcf, gen = (results.get(f"{base}@{f}", {}) for f in ("cf", "mcf", "gen"))
    olmes = _cf_metric(base)
    return {
        "task": base,
        "chance": CHANCE.get(base, 0.25),
        **{f"cf_{m}": cf.get(f"{m},none") for m in ("acc", "acc_norm", "acc_per_token", "acc_pmi")},
        "cf_olmes": olmes,
        "mcf_acc": mcf.get("acc,none"),
        "gen_em": gen.get("exact_match,letter"),
        "gen_unparsed": unparsed.get(f"{base}@gen", 0),
        "agree": agree.get(base),
        "best": max(("cf", cf.get(f"{olmes},none") or 0.0), ("mcf", mcf.get("acc,none") or 0.0), key=lambda x: x[1]),
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
        "CF: acc (none), acc_norm (per character), acc_per_token, acc_pmi (PMI against `Answer:`); the one OLMES "
        "uses for the task is starred. gen = MCF: the share of documents whose generated label is MCF's argmax "
        "label. Better of: OLMES' rule, the task's CF normalisation against MCF acc.",
        "",
        "| task | chance | CF acc | CF acc_norm | CF acc_per_token | CF acc_pmi | MCF acc | gen exact_match (unparsed) "
        "| gen = MCF | better of CF / MCF |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        cells = [
            _f(r[f"cf_{m}"]) + ("*" if m == r["cf_olmes"] else "")
            for m in ("acc", "acc_norm", "acc_per_token", "acc_pmi")
        ]
        lines.append(
            f"| {r['task']} | {r['chance']:.2f} | {' | '.join(cells)} | {_f(r['mcf_acc'])} | "
            f"{_f(r['gen_em'])} ({r['gen_unparsed']}) | {_f(r['agree'])} | {r['best'][0]} {_f(r['best'][1])} |"
        )
    lines += ["", f"Command: `{cmd}`", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
