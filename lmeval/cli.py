"""``lmeval`` entry point: one subcommand per module in this package (``cmd_*.py``).

Each command module exposes ``register(subparsers)`` which adds its parser and sets ``func`` to a callable
``(args) -> int``. A ``UserError`` from any stage becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from plans.errors import UserError

COMMAND_MODULES = (
    "lmeval.cmd_compile",
    "lmeval.cmd_show",
    "lmeval.cmd_execute",
    "lmeval.cmd_score",
    "lmeval.cmd_run",
    "lmeval.cmd_diff",
    "lmeval.cmd_lock",
    "lmeval.cmd_validate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lmeval",
        description="Compile evaluations to hashed plans, execute them, score them, diff them.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # command not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        rc = args.func(args)
    except UserError as e:
        msg = " ".join(str(e).split("\n"))
        print(f"lmeval {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"lmeval {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # e.g. `lmeval show --jsonl | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return int(rc or 0)


if __name__ == "__main__":
    raise SystemExit(main())
