"""``lmeval score RESULTS [--plan PLAN]`` and ``lmeval compare A B``."""

from __future__ import annotations

import argparse
from typing import Any

from lmeval.cli.log import TRACKER_NAMES, add_tracker_args, log_to


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "score",
        help="score a results directory: results.json, samples.parquet and a table",
        description="Apply the plan's filters and metrics to a results directory (polars); writes "
        "RESULTS/results.json and RESULTS/samples.parquet and prints the table. Missing instances are "
        "reported and their documents left out; that is exit status 2 unless --allow-partial.",
    )
    p.add_argument("results", help="results directory written by `lmeval execute`")
    p.add_argument("--plan", default=None, help="plan file (default: the one named in the manifest)")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="allow importing the user Python the plan references (every file of its task folder is checked "
        "against the sha256 recorded at compile time); the only switch that grants trust",
    )
    p.add_argument(
        "--include-path",
        action="append",
        default=[],
        metavar="DIR",
        help="with --trust-code: a folder holding the task folders of that code (repeatable; as the "
        "run.include_path=DIR the plan was compiled with, or the task's own folder). The plan records the "
        "code by content, not location: the folder whose files match the recorded sha256 is used",
    )
    p.add_argument(
        "--exclude",
        default=None,
        metavar="REPORT_DIR",
        help="a report of `lmeval contamination` on this plan: score without its contaminated documents",
    )
    p.add_argument("--allow-partial", action="store_true", help="exit 0 when instances are missing")
    p.add_argument("--bootstrap-iters", type=int, default=100000, help="bootstrap resamples (lm-eval's default)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    p.add_argument("-v", "--verbose", action="store_true", help="print the plan check's cost on stderr")
    p.add_argument(
        "--log-to",
        action="append",
        default=[],
        metavar="TRACKER",
        help=f"then log the scored run to {'|'.join(TRACKER_NAMES)} (repeatable, or a comma list; as `lmeval "
        "log`): results table, per-task metrics, provenance, samples; offline by default",
    )
    add_tracker_args(p, "log-")
    p.set_defaults(func=run)

    c = subparsers.add_parser(
        "compare",
        help="per-task metric deltas between two scored runs, with paired significance and flipped docs; of two "
        "judge runs of the same answers, the judges' agreement (Cohen's kappa, Krippendorff's alpha)",
    )
    c.add_argument("a", help="scored results directory A (baseline), or judge run A")
    c.add_argument("b", help="scored results directory B, or judge run B")
    c.add_argument("--max-flips", type=int, default=20, help="flipped doc ids to list per metric")
    c.set_defaults(func=run_compare)


def run(args: argparse.Namespace) -> int:
    from lmeval.cli.results_table import print_score
    from lmeval.scorer import score_run

    if args.log_to:  # an unknown tracker or a missing library: said before anything is scored
        from lmeval.report import parse_trackers, require

        require(parse_trackers(args.log_to))
    if args.verbose:
        from lmeval.plans import show_check_cost

        show_check_cost()
    trust = bool(args.trust_code)
    out = score_run(
        args.results,
        args.plan,
        trust_code=trust,
        include_path=args.include_path,
        bootstrap_iters=args.bootstrap_iters,
        exclude=args.exclude,
    )
    if not args.quiet:
        print_score(out)
    print(out.path)
    if out.partial and not args.allow_partial:
        raise out.partial_error()
    if args.log_to:  # results.json and samples.parquet are written: a tracker failing now leaves them as they are
        log_to(str(out.path), args.log_to, args.log_project, args.log_name, args.log_dir)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from lmeval.diff import compare_runs as compare
    from lmeval.diff import print_comparison
    from lmeval.flow import is_judge_run

    if is_judge_run(args.a) and is_judge_run(args.b):  # two judges of the same answers: their agreement
        _print_agreement(args.a, args.b)
        return 0
    print_comparison(compare(args.a, args.b), max_flips=args.max_flips)
    return 0


def _print_agreement(a: str, b: str) -> None:
    from lmeval.flow import judge_agreement

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    for r in judge_agreement(a, b):
        print(f"{r.task}: {r.n} documents graded by both judges, equal {num(r.equal)}, Cohen's kappa "
              f"{num(r.kappa)}, Krippendorff's alpha ({r.metric}) {num(r.alpha)}")  # fmt: skip
