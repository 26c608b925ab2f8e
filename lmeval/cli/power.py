"""``lmeval plan-power PLAN --baseline RESULTS``: before a plan runs, the difference between two models that
a comparison on its documents could detect (``scorer.statistics.power``)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "plan-power",
        help="the smallest difference a comparison on a plan's documents detects (80%% power, 5%% two-sided)",
        description="Per task and group of PLAN that a scored BASELINE run has, and per metric: the plan's "
        "documents, the baseline's value and per-document sd (from its stderr), the clustering's design "
        "effect (from its intervals) and the minimum detectable effect (MDE) of a paired comparison of two "
        "runs of the plan, at 80%% power with a two-sided 5%% test.",
    )
    p.add_argument("plan", help="plan file (.msgpack)")
    p.add_argument("--baseline", required=True, metavar="RESULTS", help="a scored results directory (any plan)")
    p.add_argument(
        "--correlation",
        type=float,
        default=0.5,
        metavar="R",
        help="the per-document correlation of the two runs' scores (default 0.5; 0 = unpaired bound)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from lmeval.plans import PlanReader, read_scored, reraised_as
    from lmeval.scorer import ScoreError, leaf_tasks, plan_power

    if not -1.0 <= args.correlation < 1.0:
        raise ScoreError(f"--correlation {args.correlation}: must be in [-1, 1)")
    with reraised_as(ScoreError):
        with PlanReader(args.plan) as reader:
            header = reader.header
        base = read_scored(args.baseline, samples=False).results
    sizes = {t.name: t.n_docs for t in header.tasks}
    by = {g.name: g for g in header.groups}
    for g in header.groups:
        sizes[g.name] = sum(sizes.get(t, 0) for t in leaf_tasks(g.name, by))
    rows = plan_power(sizes, base.results, base.intervals, args.correlation)
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    if not rows:
        console.print(f"no task of {args.plan} has a metric with a stderr in {args.baseline}")
        return 0
    t = Table(title=f"{args.plan}: detectable differences (baseline {args.baseline})", header_style="bold")
    heads = ("Task", "Filter", "Metric", "Docs", "Baseline", "sd", "Design effect",
             f"MDE (r={args.correlation:g})", "MDE (r=0)")  # fmt: skip
    for h in heads:
        t.add_column(h, justify="left" if h in ("Task", "Filter", "Metric") else "right", no_wrap=True)
    for r in rows:
        metric, _, filt = r.key.partition(",")
        t.add_row(
            r.task,
            filt,
            metric,
            str(r.n),
            f"{r.baseline:.4f}",
            f"{r.sd:.4f}",
            f"{r.design_effect:.2f}",
            f"{r.mde:.4f}",
            f"{r.mde_unpaired:.4f}",
        )
    console.print(t)
    console.print(
        "MDE: the smallest true difference between two runs of this plan that a paired test finds at 5% "
        "(two-sided) 4 times in 5; r is the correlation of the two runs' per-document scores"
    )
    return 0
