"""``lmeval report RESULTS_DIR... [--baseline DIR] [-o report.html]``: one self-contained HTML page."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="write one self-contained HTML page for one or many scored runs",
        description="Write one HTML file for the scored results directories: provenance, results table and "
        "charts, a comparison with the baseline (paired per-document significance), a sample browser, the plan "
        "diff when the runs' plans differ, and diagnostics. The page opens from a file with no network; the "
        "same inputs give the same bytes.",
    )
    p.add_argument("results", nargs="+", metavar="RESULTS_DIR", help="scored results directories (lmeval score)")
    p.add_argument("--baseline", metavar="DIR", help="the run the others are compared with (default: the first)")
    p.add_argument("-o", "--out", default="report.html", help="the HTML file to write (default report.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval.cli.results_table import print_clean_table
    from lmeval.plans import read_scored, refuse_input_as_output, run_inputs
    from lmeval.report import write_report

    dirs = list(args.results)
    if args.baseline and args.baseline not in dirs:
        dirs.insert(0, args.baseline)
    refuse_input_as_output(args.out, [f for d in dirs for f in run_inputs(d)], "-o")
    path = write_report(list(args.results), args.out, baseline=args.baseline)
    for d in dirs:  # runs scored with --exclude: all documents vs the clean subset
        run = read_scored(d, samples=False).results
        if run.contamination is not None:
            print_clean_table(run, f"{d}: all documents vs clean (contamination report {run.contamination.report})")
    print(path)
    return 0
