"""``lmeval export-batch PLAN`` and ``lmeval import-batch PLAN OUTPUT.jsonl --out DIR``: a plan run as a
provider's batch job (executor/batch.py)."""

from __future__ import annotations

import argparse
from typing import Any

_OVERRIDES = "model.engine.model=NAME (the provider's model), model.path=..., model.max_gen_toks=N"


def register(subparsers: Any) -> None:
    e = subparsers.add_parser(
        "export-batch",
        help="write a plan's requests as an OpenAI batch input file (JSONL, custom_id = Instance id)",
        description="Write one batch line per distinct request of PLAN: a /v1/chat/completions (default) or "
        "/v1/completions body with the plan's prompt, stop strings and sampling settings.",
    )
    e.add_argument("plan", help="the plan file (.msgpack)")
    e.add_argument("overrides", nargs="*", metavar="OVERRIDE", help=_OVERRIDES)
    e.add_argument("--out", required=True, help="the batch input file to write (.jsonl)")
    e.add_argument("--endpoint", choices=("chat", "completions"), default="chat", help="default: chat")
    e.add_argument("--resume", metavar="DIR", help="only the requests DIR (a partial import) has no rows for")
    e.set_defaults(func=run_export)

    i = subparsers.add_parser(
        "import-batch",
        help="turn a provider's batch output file into a results directory (lmeval score reads it)",
        description="Check every line of OUTPUT against PLAN (a foreign or repeated custom_id is refused) "
        "and write its answers as results rows; requests without an answer leave the import partial.",
    )
    i.add_argument("plan", help="the plan file the batch was exported from")
    i.add_argument("output", help="the provider's batch output file (.jsonl)")
    i.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="the overrides export-batch was given")
    i.add_argument("--out", required=True, help="the results directory (importing into it again completes it)")
    i.add_argument("--endpoint", choices=("chat", "completions"), default="chat", help="default: chat")
    i.add_argument("--provider", default="openai", help="recorded as the manifest's backend batch:PROVIDER")
    i.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    from lmeval.executor import export_batch
    from lmeval.plans import refuse_input_as_output, run_inputs

    refuse_input_as_output(args.out, [args.plan, *(run_inputs(args.resume) if args.resume else [])])
    n = export_batch(args.plan, args.out, args.overrides, args.endpoint, args.resume)
    print(f"{n} requests -> {args.out}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from lmeval.executor import import_batch
    from lmeval.plans import read_manifest

    out = import_batch(args.plan, args.output, args.out, args.overrides, args.endpoint, args.provider)
    print(out)
    # a partial import (requests missing or answered with an error) keeps its rows but exits 2, as a partial
    # score does: a script cannot mistake it for a complete run
    return 0 if read_manifest(out).finished else 2
