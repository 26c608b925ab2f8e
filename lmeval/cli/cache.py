"""``lmeval cache ls|prune``: the result store's size and its bound (executor/ANSWERSTORE.md)."""

from __future__ import annotations

import argparse
from pathlib import Path


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
    from lmeval.executor import ExecuteError
    from lmeval.executor.answerstore import default_location
    from lmeval.executor.storeadmin import describe, human, parse_age, parse_size, prune, remove_all

    folder = Path(args.store) if args.store else default_location()
    if args.action == "ls":
        if args.max_size or args.older_than or args.all:
            raise ExecuteError("cache ls: --max-size, --older-than and --all are options of cache prune")
        for line in describe(folder).lines():
            print(line)
        return 0
    if args.all:
        print(f"removed the result store {folder} ({human(remove_all(folder))})")
        return 0
    if not (args.max_size or args.older_than):
        raise ExecuteError("cache prune: give --max-size SIZE, --older-than AGE or --all")
    max_bytes = parse_size(args.max_size) if args.max_size else None
    max_age = parse_age(args.older_than) if args.older_than else None
    removed = prune(folder, max_bytes, max_age)
    summary = describe(folder)
    print(f"removed {removed} entries; {summary.entries} left, {human(summary.file_bytes)} on disk")
    return 0
