"""``lmeval run [OVERRIDES]``: compile → execute → score in one command."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="compile, execute and score in one go; prints the results directory last")
    p.add_argument("overrides", nargs="*", help="compile overrides, e.g. +task=arith model=tiny run.limit=50")
    p.add_argument("--out", help="results directory (default results/<plan_hash12>-<model>/)")
    p.add_argument("--plan-out", help="plan path (default plans/<name>-<hash12>.msgpack)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import compiler
    import executor
    import scorer

    plan = compiler.compile_to_file(list(args.overrides), out=args.plan_out)
    print(f"plan: {plan}")
    # the plan holds no locations (model.path among them): execute is given the model overrides again
    model = [o for o in args.overrides if o.lstrip("+").split("=", 1)[0].split(".", 1)[0] == "model"]
    results = executor.execute(str(plan), out=args.out, overrides=model, progress=not args.no_progress)
    scorer.score(str(results), plan_path=str(plan))
    print(results)
    return 0
