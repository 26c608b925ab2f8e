"""``lmeval lock [--update]``: check (or rewrite) lock/lock.json, the task hashes of every shipped task config.

Every config in ``conf/task/`` is compiled with the tiny reference model at default settings; data-backed
tasks read the reference data (``--data-dir``, default ``$LMEVAL_DATA_DIR``, in a source checkout
``../shared/data``) with the lock's ``run.limit``; the embedded ``arith`` task is compiled whole and its plan
kept in ``lock/reference/``. Exit 0 when every hash matches, 1 when any moved (with a summary of what and
why), 2 on error. An installed lmeval checks its own shipped lock; ``--update`` rewrites a checkout's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lmeval.lock import DEFAULT_LIMIT, LOCK_PATH, check, default_data_dir, update
from lmeval.plans import UserError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "lock",
        help="check (or --update) lock/lock.json: task hashes of every shipped task config",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--update", action="store_true", help="rewrite the lock and the reference plan")
    p.add_argument(
        "--data-dir",
        default=None,
        help="reference data directory (default: $LMEVAL_DATA_DIR; in a source checkout ../shared/data)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help=f"run.limit for data-backed tasks (default: the lock's, else {DEFAULT_LIMIT}; 0 = full)",
    )
    p.add_argument("--lock", default=str(LOCK_PATH), help="lock file (default: the shipped lock/lock.json)")
    p.add_argument("--verbose", "-v", action="store_true", help="log each compile")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and not args.update:
        raise UserError("--limit only applies with --update (a check uses the lock's own settings)")
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    lock_path = Path(args.lock)
    log = (lambda m: print(m, flush=True)) if args.verbose else None
    if args.update:
        result = update(lock_path, data_dir, args.limit, log=log)
        if result.changes is None:
            print("new lock")
        elif not result.changes.ok:
            print(result.changes.summary(advice=False))
        print(result.path)
        return 0
    checked = check(lock_path, data_dir, log=log)
    print(checked.summary())
    return 0 if checked.ok else 1
