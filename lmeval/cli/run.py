"""``lmeval run [OVERRIDES]``: compile → execute → score in one command."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="compile, execute and score in one go; prints the results directory last")
    p.add_argument("overrides", nargs="*", help="compile overrides, e.g. +task=arith model=tiny run.limit=50")
    p.add_argument("--out", help="results directory (default results/<plan_hash12>-<model>/)")
    p.add_argument("--plan-out", help="plan path (default lmeval-plans/<name>-<hash12>.msgpack)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="allow scoring to import user Python the plan references (checked against its sha256), "
        "as `lmeval score --trust-code`",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the engine's own output (else it goes to DIR/engine.log) and the plan checks' cost",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval import executor, scorer
    from lmeval.cli.results_table import print_score
    from lmeval.compiler import compile_located, execute_model_overrides
    from lmeval.plans import show_check_cost

    if args.verbose:
        show_check_cost()

    c = compile_located(list(args.overrides))
    for warning in c.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    plan = c.write(args.plan_out)
    print(f"plan: {plan}")
    trust = bool(args.trust_code)  # the flag is the one switch that grants trust, as for `lmeval score`
    # the plan records user scoring code by content only: scoring finds its task folder under this run's
    # own run.include_path, as `lmeval score --include-path` would
    include = c.locations.get("run.include_path")
    scorer.check_user_code(plan, trust, include)  # before the model runs, not after
    results = executor.execute(
        str(plan),
        out=args.out,
        overrides=execute_model_overrides(list(args.overrides), c.header.config),
        progress=not args.no_progress,
        verbose=args.verbose,
    )
    print_score(scorer.score_run(str(results), plan_path=str(plan), trust_code=trust, include_path=include))
    print(results)
    return 0
