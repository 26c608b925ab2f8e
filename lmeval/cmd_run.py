"""``lmeval run [OVERRIDES]``: compile → execute → score in one command."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="compile, execute and score in one go; prints the results directory last")
    p.add_argument("overrides", nargs="*", help="compile overrides, e.g. +task=arith model=tiny run.limit=50")
    p.add_argument("--out", help="results directory (default results/<plan_hash12>-<model>/)")
    p.add_argument("--plan-out", help="plan path (default plans/<name>-<hash12>.msgpack)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="show the engine's own output (else it goes to DIR/engine.log)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import compiler
    import executor
    import scorer

    plan = compiler.compile_to_file(list(args.overrides), out=args.plan_out)
    print(f"plan: {plan}")
    results = executor.execute(
        str(plan),
        out=args.out,
        overrides=user_model_trust(plan),
        progress=not args.no_progress,
        verbose=args.verbose,
    )
    scorer.score(str(results), plan_path=str(plan))
    print(results)
    return 0


def user_model_trust(plan: object) -> list[str]:
    """``model.trust_remote_code=true`` for execute when this user's own compile overrides (or the model
    config they chose) set it: execute never takes it from a plan, but here the plan was made by this very
    command from this user's settings."""
    from plans.io import read_header

    model = read_header(str(plan)).config.get("model") or {}
    trusted = isinstance(model, dict) and model.get("trust_remote_code") is True
    return ["model.trust_remote_code=true"] if trusted else []
