"""``lmeval run [OVERRIDES]``: compile → execute → score in one command."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lmeval.plans.funcref import is_user_ref


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="compile, execute and score in one go; prints the results directory last")
    p.add_argument("overrides", nargs="*", help="compile overrides, e.g. +task=arith model=tiny run.limit=50")
    p.add_argument("--out", help="results directory (default results/<plan_hash12>-<model>/)")
    p.add_argument("--plan-out", help="plan path (default plans/<name>-<hash12>.msgpack)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="allow scoring to import user Python the plan references (checked against its sha256), "
        "as `lmeval score --trust-code`",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="show the engine's own output (else it goes to DIR/engine.log)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval import executor, scorer
    from lmeval.compiler.api import compile_located, plan_path
    from lmeval.plans.io import write_sealed

    c = compile_located(list(args.overrides))
    plan = write_sealed(plan_path(c.header, args.plan_out or c.locations.get("run.out")), c.header, c.blobs)
    print(f"plan: {plan}")
    trust = bool(args.trust_code)  # the flag is the one switch that grants trust, as for `lmeval score`
    # the plan records user scoring code by content only: scoring finds its task folder under this run's
    # own run.include_path, as `lmeval score --include-path` would
    include = c.locations.get("run.include_path")
    _check_user_code(plan, trust, include)  # before the model runs, not after
    # the plan holds no locations (model.path among them): execute is given the model overrides again, and
    # this user's own trust_remote_code setting (execute never takes it from a plan)
    model = [o for o in args.overrides if o.lstrip("+").split("=", 1)[0].split(".", 1)[0] == "model"]
    results = executor.execute(
        str(plan),
        out=args.out,
        overrides=[*model, *user_model_trust(plan)],
        progress=not args.no_progress,
        verbose=args.verbose,
    )
    scorer.score(str(results), plan_path=str(plan), trust_code=trust, include_path=include)
    print(results)
    return 0


def _check_user_code(plan: Path, trusted: bool, include: Any) -> None:
    """``score``'s one-line error for the first user function the plan's scoring would refuse: without
    --trust-code, any; with it, one whose task folder is not found or has changed."""
    from lmeval.plans.io import read_header
    from lmeval.scorer.pyref import Trust, locate_ref

    trust = Trust.of(include) if trusted else None
    for t in read_header(plan).tasks:
        for field in ("process_results", "metric_list", "filter_list"):
            for ref in _refs(t.config.get(field)):
                locate_ref(ref, trust, f"task {t.name}: {field}")


def _refs(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if is_user_ref(value):
            yield value
        else:
            for v in value.values():
                yield from _refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)


def user_model_trust(plan: object) -> list[str]:
    """``model.trust_remote_code=true`` for execute when this user's own compile overrides (or the model
    config they chose) set it: execute never takes it from a plan, but here the plan was made by this very
    command from this user's settings."""
    from lmeval.plans.io import read_header

    model = read_header(str(plan)).config.get("model") or {}
    trusted = isinstance(model, dict) and model.get("trust_remote_code") is True
    return ["model.trust_remote_code=true"] if trusted else []
