"""``lmeval cache ls|prune``: the result store's size and its bound (executor/ANSWERSTORE.md)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "cache",
        help="show the result store's size (ls) or bound it (prune)",
        description="The result store keeps every answer execute computed, so that no run computes it again. "
        "ls shows its entries and size; prune removes the least recently used entries beyond --max-size and "
        "those not used for --older-than, or with --all the whole store.",
    )
    p.add_argument("action", choices=["ls", "prune"], help="ls: what the store holds; prune: bound it")
    p.add_argument(
        "--store",
        metavar="DIR",
        default=None,
        help="the store's folder (default: $LMEVAL_STORE_DIR, else $LMEVAL_CACHE/store, as execute's run.store)",
    )
    p.add_argument("--max-size", metavar="SIZE", help="prune: keep at most SIZE of answers (e.g. 2G, 500M)")
    p.add_argument("--older-than", metavar="AGE", help="prune: remove entries not used for AGE (e.g. 30d, 12h)")
    p.add_argument(
        "--all", action="store_true", help="prune: remove the whole store (even one this lmeval cannot read)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval.executor import cache

    for line in cache(args.action, args.store, args.max_size, args.older_than, args.all):
        print(line)
    return 0
