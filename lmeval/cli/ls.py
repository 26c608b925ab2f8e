"""``lmeval ls [tasks|groups|tags] [PATTERN]``: every name ``run.tasks``/``+task`` can compile.

Sources, in lookup order: ``run.include_path`` folders (``--include-path``), ``conf/task``, and lm-eval's
installed catalog. A conf/task name that shadows one of lm-eval's says so; the lm-eval entry stays
reachable as ``lm_eval:NAME``. PATTERN is a shell-style glob (``'mmlu_*'``) or a substring.
"""

from __future__ import annotations

import argparse
import json
import sys

_KINDS = {"tasks": "task", "groups": "group", "tags": "tag"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "ls",
        help="list the tasks, groups and tags that can be compiled (conf/task, include paths, lm-eval)",
        description="List what run.tasks / +task can name: conf/task configs, run.include_path folders and, "
        "when lm-eval is installed, its task catalog, with kind, output type and source. conf/task names win "
        "over lm-eval's on a clash (the lm-eval entry is then listed as lm_eval:NAME).",
    )
    p.add_argument("what", nargs="?", default="all", choices=["all", *_KINDS], help="which kind to list")
    p.add_argument("pattern", nargs="?", default=None, help="glob ('mmlu_*') or substring to filter names")
    p.add_argument(
        "--include-path",
        action="append",
        default=[],
        metavar="DIR",
        help="also list the task YAMLs under DIR (as run.include_path=DIR would)",
    )
    p.add_argument(
        "--source", choices=["conf/task", "include_path", "lm-eval"], default=None, help="only names from this source"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lmeval.compiler import catalog, find_names

    kind = None if args.what == "all" else _KINDS[args.what]
    rows = find_names(args.include_path, kind, args.source, args.pattern)
    out = sys.stdout
    if args.json:
        for r in rows:
            out.write(
                json.dumps(
                    {
                        "name": r.name,
                        "kind": r.kind,
                        "output_type": r.output_type,
                        "source": r.source,
                        "path": r.path,
                        "note": r.note,
                    }
                )
                + "\n"
            )
        return 0
    width = max([len(r.name) for r in rows] + [4])
    for r in rows:
        note = f"  ({r.note})" if r.note else ""
        out.write(f"{r.name:<{width}}  {r.kind:<5}  {r.output_type or '-':<21}  {r.source}{note}\n")
    cat = catalog()
    tail = "" if cat is not None else "; lm-eval is not installed, so its catalog is not listed"
    out.write(f"{len(rows)} name(s){tail}\n")
    return 0
