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
    p.add_argument("overrides", nargs="*", help="Hydra overrides")
    p.set_defaults(func=run)


def _summary(header: object) -> str:
    from lmeval.plans.records import PlanHeader

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
    from lmeval.compiler.api import compile_located, plan_path
    from lmeval.compiler.config import expand_sweep
    from lmeval.plans.io import write_sealed

    combos = expand_sweep(args.overrides) if args.multirun else [list(args.overrides)]
    if args.multirun and args.out and len(combos) > 1:
        from lmeval.compiler.errors import CompileError

        raise CompileError("--out names one file but -m gives several plans; use run.out or the default names")
    # compile everything first: nothing is written when any combination fails
    compiled = [(combo, compile_located(combo)) for combo in combos]
    paths = []
    for combo, c in compiled:
        header = c.header
        for note in header.extra.get("notes", []):
            print(f"note: {note}", file=sys.stderr)
        codec = "none" if args.no_compress else "zstd"
        path = write_sealed(plan_path(header, args.out or c.locations.get("run.out")), header, c.blobs, codec)
        if args.multirun:
            print(f"[{' '.join(combo)}]")
        print(_summary(header))
        paths.append(path)
    for p in paths:
        print(p)
    return 0
