"""``lmeval validate tasks.jsonl``: check a JSONL task spec line by line.

Exit status: 0 every line valid, 1 some line invalid, 2 the file cannot be read.
"""

from __future__ import annotations

import argparse
import sys

from lmeval.compiler import SpecReadError, validate_file


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "validate",
        help="validate a JSONL task spec (one task per line)",
        description="Validate every line of a JSONL task spec independently. Errors print as "
        "FILE:LINE: task_id: rule (field): detail, then a summary line. Exit status 0 when all lines "
        "are valid, 1 when any is invalid, 2 when the file cannot be read.",
    )
    p.add_argument("path", help="the spec file (.jsonl)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        report = validate_file(args.path)
    except SpecReadError as e:
        print(f"lmeval validate: error: {e}", file=sys.stderr)
        return 2
    out = sys.stdout
    for issue in report.issues:
        out.write(issue.format(args.path) + "\n")
    n_bad = len(report.bad_lines)
    n_ok = len(report.records)
    if report.ok:
        out.write(f"{args.path}: {report.n_lines} lines, all valid\n")
        return 0
    out.write(f"{args.path}: {report.n_lines} lines, {n_ok} valid, {n_bad} invalid ({len(report.issues)} errors)\n")
    return 1
