"""``lmeval compile [-m] [OVERRIDES...]``: configs → plan file; the path is the last line of output."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compile",
        help="compile task/model/run configs into a hashed plan",
        description=(
            "Compose conf/ with Hydra overrides (e.g. +task=arith, '+task=[arc_easy,boolq]', run.num_fewshot=5, "
            "run.limit=100, run.data_dir=DIR, model.path=DIR) and write the plan. Prints a summary and the "
            "plan path as the last line (one path per line with -m)."
        ),
    )
    p.add_argument("-m", "--multirun", action="store_true", help="sweep: one plan per combination (a=1,2)")
    p.add_argument("--out", default=None, help="output file (same as run.out=...)")
    p.add_argument(
        "--no-compress",
        action="store_true",
        help="store the records uncompressed (plain msgpack after the header); same plan_hash and task hashes",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="build every task, without reading or writing the build cache ($LMEVAL_CACHE/build; "
        "LMEVAL_BUILD_CACHE=0 does the same)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="build tasks in N worker processes (default: LMEVAL_COMPILE_JOBS, else the number of CPUs); "
        "the plan is the same for any N",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides")
    p.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return n


def _summary(header: object) -> str:
    from lmeval.plans import PlanHeader

    assert isinstance(header, PlanHeader)
    lines = []
    for t in header.tasks:
        lines.append(f"  {t.name}: {t.output_type}, {t.num_fewshot}-shot, {t.n_docs} docs, {t.n_instances} instances")
    lines.append(
        f"{len(header.tasks)} task(s), {header.n_docs} docs, {header.n_instances} instances, "
        f"plan_hash {header.plan_hash[:12]}"
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from lmeval.compiler import BuildSettings, compile_located, compile_sweep

    settings = BuildSettings()
    if args.no_cache:
        settings = dataclasses.replace(settings, cache=False)
    if args.jobs is not None:
        settings = dataclasses.replace(settings, workers=args.jobs)
    # a sweep compiles everything first: nothing is written when any combination fails
    compiled = (
        compile_sweep(args.overrides, args.out, settings)
        if args.multirun
        else [(args.overrides, compile_located(args.overrides, settings))]
    )
    paths = []
    for combo, c in compiled:
        for note in c.header.extra.get("notes", []):
            print(f"note: {note}", file=sys.stderr)
        for warning in c.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        path = c.write(args.out, codec="none" if args.no_compress else "zstd")
        if args.multirun:
            print(f"[{' '.join(combo)}]")
        print(_summary(c.header))
        paths.append(path)
    for p in paths:
        print(p)
    return 0
