"""``lmeval`` entry point: one module per command (or closely related pair) in this package, ``lmeval/cli/``.

Each command module exposes ``register(subparsers)`` which adds its parser and sets ``func`` to a callable
``(args) -> int``. A ``UserError`` from any stage becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
from collections.abc import Sequence

from lmeval.common import SafeStdout, term_safe
from lmeval.plans import UserError

# THE command table: each command -> the module (lmeval/cli/<command>.py) registering it (tests/cli check it
# against build_parser). A command line naming one imports that module alone, not every command's dependencies
# (Hydra, the lock builder, the executor, ...). Its order is the order of ``lmeval --help``.
MODULE_OF = {
    "compile": "lmeval.cli.compile", "show": "lmeval.cli.show", "execute": "lmeval.cli.execute",
    "merge": "lmeval.cli.execute", "score": "lmeval.cli.score", "compare": "lmeval.cli.score",
    "run": "lmeval.cli.run", "next-turn": "lmeval.cli.run", "diff": "lmeval.cli.diff", "lock": "lmeval.cli.lock",
    "validate": "lmeval.cli.validate", "report": "lmeval.cli.report", "export": "lmeval.cli.export",
    "log": "lmeval.cli.log", "ls": "lmeval.cli.ls", "contamination": "lmeval.cli.contamination",
    "plan-power": "lmeval.cli.power",
    "export-batch": "lmeval.cli.batch", "import-batch": "lmeval.cli.batch",
    "judge": "lmeval.cli.judge", "judge-score": "lmeval.cli.judge",
    "trajectories": "lmeval.cli.trajectories", "cache": "lmeval.cli.cache",
}  # fmt: skip
COMMAND_MODULES = tuple(dict.fromkeys(MODULE_OF.values()))  # each module once, in the table's order


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given a command line whose first word is a command (``MODULE_OF``), the
    parser of that command's module only (same parsing of that line)."""
    parser = argparse.ArgumentParser(
        prog="lmeval",
        description="Compile evaluations to hashed plans, execute them, score them, diff them.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    first = argv[0] if argv else None
    modules = (MODULE_OF[first],) if first in MODULE_OF else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


MAX_ERROR_CHARS = 4000  # an error line quoting an input (a 5000-digit task name, a 1 MB id) is cut to this


def _capped(msg: str) -> str:
    return msg if len(msg) <= MAX_ERROR_CHARS else f"{msg[:MAX_ERROR_CHARS]}... ({len(msg)} characters, cut)"


def _is_override(arg: str) -> bool:
    return not arg.startswith("-") and "=" in arg


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    # KEY=VALUE overrides may also follow the options (`lmeval execute PLAN --out DIR model.path=M`)
    if extra and isinstance(getattr(args, "overrides", None), list) and all(_is_override(x) for x in extra):
        args.overrides = [*args.overrides, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    out = sys.stdout
    sys.stdout = SafeStdout(out)  # type: ignore[assignment] # data-safe output (common/termsafe.py)
    try:
        rc = args.func(args)
    except UserError as e:
        msg = term_safe(_capped(" ".join(str(e).split("\n"))), one_line=True)
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
    except OSError as e:  # the file system refused (disk full, read-only, /proc): one line, not a traceback
        where = f"{e.filename}: " if e.filename else ""
        msg = _capped(f"{where}{e.strerror or e}")
        print(term_safe(f"lmeval {args.command}: error: {msg}", one_line=True), file=sys.stderr)
        return 2
    finally:
        sys.stdout = out
    return int(rc or 0)


def entry() -> None:
    """The ``lmeval`` command: ``main``, then exit without the interpreter's teardown.

    Every command has closed and renamed its files by the time ``main`` returns; what is left is freeing
    every object (an engine's torch state, a large plan's records), which takes seconds (about 3 s after a
    vLLM run) and changes nothing. Output is flushed and atexit handlers (logging's among them) still run."""
    rc = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or broken pipe: nothing more can be said there
            pass
    atexit._run_exitfuncs()
    os._exit(rc)


if __name__ == "__main__":
    entry()
