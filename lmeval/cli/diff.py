"""``lmeval diff OLD NEW``: what changed between two plans, prompt by prompt (exit 0 same, 1 differ, 2 error).

Each side is a plan file, a chained run's folder (both sides: compared stage by stage, naming the stage and turn
where prompts first differ) or a list of compile overrides; sides are separated by ``--`` when either is not
a single existing file: ``lmeval diff +task=mmlu run.num_fewshot=5 -- +task=mmlu run.num_fewshot=0``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from lmeval.plans import UserError

USAGE = (
    "lmeval diff [--json] [--show N] [--task T] [--no-verify] "
    "(OLD.msgpack NEW.msgpack | OLD_CHAIN NEW_CHAIN | OVERRIDES -- OVERRIDES)"
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diff",
        help="what changed between two plans (or two configs, compiled on the fly)",
        description=__doc__,
        usage=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--show", type=int, default=5, metavar="N", help="render the first N changed prompts (5)")
    p.add_argument("--task", default=None, metavar="T", help="only tasks named T (a name, glob or group)")
    p.add_argument("--no-verify", action="store_true", help="skip the plan hash check (size is still checked)")
    # REMAINDER keeps the '--' that separates the two sides; options after the sides are picked out below.
    p.add_argument(
        "sides",
        nargs=argparse.REMAINDER,
        metavar="OLD NEW",
        help="two plan files, or two override lists separated by --",
    )
    p.set_defaults(func=run)


_FLAGS_WITH_VALUE = ("--show", "--task")


def _pick_options(args: argparse.Namespace) -> list[str]:
    rest: list[str] = []
    items = list(args.sides)
    i = 0
    while i < len(items):
        a = items[i]
        name, eq, val = a.partition("=")
        if a in ("--json", "--no-verify"):
            setattr(args, a[2:].replace("-", "_"), True)
        elif name in _FLAGS_WITH_VALUE:
            if not eq:
                if i + 1 >= len(items):
                    raise UserError(f"{name} needs a value")
                i += 1
                val = items[i]
            if name == "--show":
                try:
                    args.show = int(val)
                except ValueError:
                    raise UserError(f"--show: not a number: {val!r}") from None
            else:
                args.task = val
        else:
            rest.append(a)
        i += 1
    return rest


def split_sides(items: list[str]) -> tuple[list[str], list[str]]:
    """Two plan paths, or two override lists separated by ``--``."""
    if "--" in items:
        k = items.index("--")
        old, new = items[:k], items[k + 1 :]
        if "--" in new:
            raise UserError("diff takes two sides: more than one '--' given")
        return old, new
    if len(items) == 2:
        return items[:1], items[1:]
    raise UserError(f"diff needs two plans, or two config override lists separated by '--'; usage: {USAGE}")


def _is_chain_side(side: list[str]) -> bool:
    """A chained run's folder (plans/plan/chain.py: it holds chain.json)."""
    from lmeval.plans import is_chain

    return len(side) == 1 and os.path.isdir(side[0]) and is_chain(side[0])


def _is_plan_side(side: list[str]) -> bool:
    return len(side) == 1 and ("=" not in side[0] or os.path.isfile(side[0]))


def _materialize(side: list[str], tmp: str, label: str) -> str:
    if _is_plan_side(side):
        if not os.path.exists(side[0]):
            raise UserError(f"{side[0]}: no such plan file")
        return side[0]
    if not side:
        raise UserError(f"diff: the {label} side is empty (nothing before/after '--')")
    from lmeval.compiler import compile_plan  # lazy: plans-only diffs never import the compiler
    from lmeval.plans import write_plan

    header, records = compile_plan(side)
    out = Path(tmp) / f"{label}.msgpack"
    write_plan(out, header, records)
    return str(out)


def run(args: argparse.Namespace) -> int:
    from lmeval.diff import diff_plans, render_text

    old_side, new_side = split_sides(_pick_options(args))
    if _is_chain_side(old_side) and _is_chain_side(new_side):
        from lmeval.diff import diff_chains, render_chain

        chains = diff_chains(old_side[0], new_side[0], show=args.show, task=args.task, verify=not args.no_verify)
        print(chains.to_json() if args.json else render_chain(chains))
        return 0 if chains.identical else 1
    with tempfile.TemporaryDirectory(prefix="lmeval-diff-") as tmp:
        old = _materialize(old_side, tmp, "old")
        new = _materialize(new_side, tmp, "new")
        labels = (
            old if _is_plan_side(old_side) else "old (compiled)",
            new if _is_plan_side(new_side) else "new (compiled)",
        )
        report = diff_plans(old, new, show=args.show, task=args.task, verify=not args.no_verify, labels=labels)
        if not _is_plan_side(old_side):
            report.old = " ".join(old_side)
        if not _is_plan_side(new_side):
            report.new = " ".join(new_side)
        print(report.to_json() if args.json else render_text(report))
    return 0 if report.identical else 1
