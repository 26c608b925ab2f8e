"""``lmeval contamination PLAN --corpus PATH... -o REPORT_DIR``: n-gram overlap of plan documents and a corpus."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lmeval.plans import UserError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "contamination",
        help="which plan documents a corpus contains (word n-gram overlap); a report for score --exclude",
        description="Hash the n-grams of each plan document (the rendered question after the few-shot block, "
        "the target, the choices; GPT-3 / lm-eval normalisation) and stream the corpus (text, JSONL, Parquet "
        "files or folders) against them. Writes REPORT_DIR/summary.json, documents.parquet, locations.parquet.",
    )
    p.add_argument("plan", help="plan file")
    p.add_argument("--corpus", nargs="+", required=True, metavar="PATH", help="corpus files or folders")
    p.add_argument("-o", "--out", required=True, metavar="REPORT_DIR", help="report folder")
    p.add_argument("--ngram", type=int, default=13, help="words per n-gram (default 13)")
    p.add_argument("--fields", default="prompt,target,choices", help="checked fields (default prompt,target,choices)")
    p.add_argument("--text-field", default="text", help="the text field of JSONL records / Parquet column")
    p.add_argument(
        "--min-fraction",
        type=float,
        default=0.0,
        help="a document is contaminated when at least this fraction of its n-grams occur (default: any one)",
    )
    p.add_argument("--workers", type=int, default=0, help="corpus shards matched in parallel on Ray (one machine)")
    p.add_argument("--ray", default=None, metavar="ADDR", help="an existing Ray cluster (host:port) for the shards")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval.contamination import FIELDS, REPORT_FILES, check_contamination, write_contamination_report
    from lmeval.plans import refuse_input_as_output

    fields = tuple(f.strip() for f in args.fields.split(",") if f.strip())
    bad = [f for f in fields if f not in FIELDS]
    if bad or not fields:
        raise UserError(f"--fields: unknown field {bad[0] if bad else '(none)'!r} (known: {', '.join(FIELDS)})")
    if args.ngram < 1:
        raise UserError(f"--ngram: must be at least 1, got {args.ngram}")
    if not 0.0 <= args.min_fraction <= 1.0:
        raise UserError(f"--min-fraction: must be within [0, 1], got {args.min_fraction}")
    if args.workers < 0:
        raise UserError(f"--workers: must be at least 0, got {args.workers}")
    refuse_input_as_output([Path(args.out) / n for n in REPORT_FILES], [args.plan, *args.corpus], "-o")
    report = check_contamination(
        args.plan,
        args.corpus,
        n=args.ngram,
        fields=fields,
        text_field=args.text_field,
        min_fraction=args.min_fraction,
        workers=args.workers,
        address=args.ray,
    )
    out = write_contamination_report(report, args.out)
    c = report.summary["corpus"]
    print(f"{'task':<40} {'checked':>8} {'contaminated':>12}")
    for t in report.tasks:
        print(f"{t.task:<40} {t.checked:>8} {len(t.contaminated):>12}")
    skipped_units = sum(c["skipped_units"].values())
    print(
        f"corpus: {c['files']} files, {c['bytes']} bytes, {c['units']} units; skipped {len(c['skipped_files'])} "
        f"files, {skipped_units} units"
    )
    for f, why in c["skipped_files"].items():
        print(f"skipped {f}: {why}")
    for why, k in c["skipped_units"].items():
        print(f"skipped {k} units: {why}")
    print(out)
    return 0
