"""``lmeval export RESULTS_DIR --format lm-eval-samples|lm-eval-0.5-samples|eee|hf-eval-results [-o DIR]
[--plan PLAN]``: a scored run in other tools' formats."""

from __future__ import annotations

import argparse
from typing import Any

# report.export.FORMATS (kept here so --help needs no import; tests check they agree)
FORMAT_NAMES = ("lm-eval-samples", "lm-eval-0.5-samples", "eee", "hf-eval-results")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a scored run in other tools' formats (lm-eval samples, Every Eval Ever, Hub eval results)",
        description="Write a scored results directory in a format other tools read. lm-eval-samples: lm-eval "
        "0.4.13's --log_samples files (samples_<task>_<date>.jsonl), one line per filter and document, with "
        "lm-eval's fields, order and hashes. lm-eval-0.5-samples: lm-eval 0.5's sample logs (the Instance's "
        "target, the scorer's pipeline as filter, scores_per_repeat). eee: Every Eval Ever (schema 0.3.0) aggregate "
        "and instance-level "
        "files per task under data/lmeval/<developer>/<model>/, with the plan, request and tokenizer hashes. "
        "hf-eval-results: Hugging Face Hub .eval_results/<task>.yaml for a model repo (tasks on Hub datasets; "
        "push with `hf upload`). "
        "The run's plan is read (documents, requests).",
    )
    p.add_argument("results", metavar="RESULTS_DIR", help="a scored results directory (lmeval score)")
    p.add_argument("--format", required=True, choices=FORMAT_NAMES, help="what to write")
    p.add_argument("-o", "--out", default=None, help="the folder to write into (default RESULTS_DIR/export/FORMAT)")
    p.add_argument("--plan", default=None, help="the run's plan, when it is not where the run says")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lmeval.report import export_results as export

    out = args.out or str(Path(args.results) / "export" / args.format)
    for path in export(args.results, args.format, out, plan=args.plan):
        print(path)
    return 0
