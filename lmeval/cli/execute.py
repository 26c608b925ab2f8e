"""``lmeval execute PLAN`` and ``lmeval merge DIR... --out DIR``."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    from lmeval.plans import backend_names

    p = subparsers.add_parser(
        "execute",
        help="run a compiled plan on a model, writing one Parquet row per Instance",
        description="Run every Instance of PLAN on the model the plan was compiled for (or the one the "
        "overrides name) and write Parquet results. Rerunning the same command resumes a killed run.",
    )
    p.add_argument("plan", help="the plan file (.msgpack) from lmeval compile")
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help=f"model=NAME, model.path=DIR, model.backend={'|'.join(backend_names())}, model.engine.KEY=VALUE; "
        "run.store=DIR|off (the result store: default $LMEVAL_CACHE/store)",
    )
    p.add_argument("--out", help="results directory (default: results/<plan_hash12>-<model>/)")
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N (by instance id)")
    p.add_argument(
        "--reuse", metavar="DIR", help="copy results of identical requests (same request hash and model) from DIR"
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run N engines (one per GPU or tensor-parallel group, or N CPU engines) on Ray; needs lmeval[ray]",
    )
    p.add_argument(
        "--ray",
        metavar="auto|ADDRESS",
        help="run on an existing Ray cluster (default workers: one engine per GPU group of the cluster)",
    )
    p.add_argument("--chunk-size", type=int, metavar="N", help="Instances per chunk of work (default: ~128 chunks)")
    p.add_argument("--gpus-per-worker", type=float, metavar="G", help="GPUs per engine (default: TP x PP size)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the engine's own output (else it goes to DIR/engine.log) and the plan check's cost",
    )
    p.add_argument("--part-size", type=int, default=None, metavar="N", help="rows per Parquet part (default 4096)")
    p.set_defaults(func=run_execute)

    m = subparsers.add_parser(
        "merge",
        help="combine the results directories of a plan's shards",
        description="Combine the results of shards 0/N .. N-1/N of one plan into one results directory. "
        "Every row is checked against the plan's Instances first.",
    )
    m.add_argument("dirs", nargs="+", metavar="DIR", help="the shards' results directories")
    m.add_argument("--plan", default=None, help="the plan the shards ran (default: the one their manifests name)")
    m.add_argument("--out", required=True, help="the merged results directory (must not exist)")
    m.set_defaults(func=run_merge)


def run_execute(args: argparse.Namespace) -> int:
    from lmeval.executor import execute

    if args.verbose:
        from lmeval.plans import show_check_cost

        show_check_cost()
    store, overrides = split_store(args.overrides)
    out = execute(
        args.plan,
        out=args.out,
        overrides=overrides,
        store=store,
        shard=args.shard,
        reuse=args.reuse,
        progress=not args.no_progress,
        part_size=args.part_size,
        verbose=args.verbose,
        close_backend=False,  # the command exits next (lmeval.cli.entry): no engine teardown to wait for
        workers=args.workers,
        ray=args.ray,
        chunk_size=args.chunk_size,
        gpus_per_worker=args.gpus_per_worker,
    )
    print(out)
    return 0


def split_store(overrides: list[str]) -> tuple[str | None, list[str]]:
    """``run.store=DIR|off`` (the last one given) and the model overrides without it."""
    store = None
    rest = []
    for ov in overrides:
        key, eq, value = ov.partition("=")
        if eq and key.lstrip("+") == "run.store":
            store = value
        else:
            rest.append(ov)
    return store, rest


def run_merge(args: argparse.Namespace) -> int:
    from lmeval.executor import merge

    print(merge(args.dirs, args.out, plan=args.plan))
    return 0
