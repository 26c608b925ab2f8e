"""``lmeval show PLAN``: what a plan will ask the model, before anything runs. ``lmeval show CHAIN_FOLDER``: each
stage of a chained run (plans/plan/chain.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from lmeval.common import json_text
from lmeval.plans import InstanceRecord, PlanHeader, PlanReader


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("show", help="print a plan's header, per-task counts and rendered examples")
    p.add_argument("plan", help="plan file (.msgpack), or a chained run's folder (every stage)")
    p.add_argument("-n", "--examples", type=int, default=1, help="rendered Instances to print per task")
    p.add_argument("--task", help="only this task")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per Instance (lm-eval's fields)")
    p.add_argument("--config", action="store_true", help="also print the resolved config")
    p.add_argument("--media", action="store_true", help="list every Instance's images (sha256, size, MIME)")
    p.add_argument(
        "--cost",
        action="store_true",
        help="print per task the requests, prompt tokens and most generated tokens (max_gen_toks x repeats)",
    )
    p.add_argument("--price-in", type=float, metavar="USD", help="with --cost: price per million prompt tokens")
    p.add_argument("--price-out", type=float, metavar="USD", help="with --cost: price per million generated tokens")
    add_estimate_args(p)
    p.set_defaults(func=run)


def add_estimate_args(p: argparse.ArgumentParser) -> None:
    """``--estimate [OVERRIDES]`` and its rate (``show`` and ``run --dry-run``; lmeval/cli/estimate.py)."""
    p.add_argument(
        "--estimate",
        nargs="*",
        metavar="OVERRIDE",
        help="the bill before the run: requests, prompt/distinct tokens, stored answers, tokens to compute, "
        "generation bounds, and the time; with model overrides (e.g. model=smollm2) times a calibration slice "
        "of the plan on that engine",
    )
    p.add_argument("--tokens-per-s", type=float, metavar="N", help="with --estimate: time at this rate (no slice)")
    p.add_argument("--slice-docs", type=int, default=4, metavar="N", help="with --estimate: calibration documents")


def instance_json(rec: InstanceRecord) -> dict[str, Any]:
    """lm-eval's Instance fields plus what the plan adds (ids, hashes, token counts)."""
    return {
        "task": rec.task,
        "doc_id": rec.doc_id,
        "idx": rec.idx,
        "request_type": rec.request_type,
        "arguments": list(rec.arguments),
        "repeats": rec.repeats,
        "instance_id": rec.instance_id,
        "request_hash": rec.request_hash,
        "n_context_tokens": None if rec.context_ids is None else len(rec.context_ids),
        "n_continuation_tokens": None if rec.continuation_ids is None else len(rec.continuation_ids),
        **({} if rec.media is None else {"media": rec.media}),
        **({} if rec.tools is None else {"tools": rec.tools}),  # a tool-call task's tools (plans/plan/toolcalls.py)
    }


def media_line(m: dict[str, Any]) -> str:
    """One image of an Instance: sha256, width x height, MIME type, bytes, and the placeholder it fills."""
    at = f" <image> #{m['placeholder']}" if m.get("placeholder") is not None else " (no placeholder)"
    return f"{m['sha256']} {m['width']}x{m['height']} {m['mime']} {m['size']} B{at}"


def print_media(reader: PlanReader, task: str | None) -> None:
    """Each Instance's images, one line per image under a line naming the Instance."""
    out = sys.stdout
    for rec in _instances(reader, task):
        if rec.media:
            out.write(f"{rec.task} doc {rec.doc_id} idx {rec.idx} ({rec.instance_id}): {len(rec.media)} image(s)\n")
            for k, m in enumerate(rec.media):
                out.write(f"  {k}: {media_line(m)}\n")


def tools_line(tools: list[dict[str, Any]], parser: Any) -> str:
    """A tool-call Instance's tools (names and the sha256 of their schemas) and the task's reply parser."""
    from lmeval.plans import content_hash

    names = ", ".join(str(t.get("function", {}).get("name")) for t in tools)
    return f"⟦tools: {names} (schemas {content_hash(tools)[:12]}); replies read by {parser}⟧\n"


def _instances(reader: PlanReader, task: str | None) -> Iterator[InstanceRecord]:
    for rec in reader.records(task=task) if task else reader:
        if isinstance(rec, InstanceRecord):
            yield rec


def header_lines(h: PlanHeader) -> list[str]:
    m = h.model
    lines = [
        f"plan      {h.plan_hash}",
        f"format    {h.format} v{h.version} (lmeval {h.lmeval_version})",
        f"model     {m.name} backend={m.backend}"
        + (f" tokenizer={m.tokenizer_hash[:12]}" if m.tokenizer_hash else "")
        + (f" chat_template={m.chat_template_hash[:12]}" if m.chat_template_hash else ""),
        f"totals    {len(h.tasks)} tasks, {h.n_docs} docs, {h.n_instances} instances",
    ]
    if m.token_rule is not None:
        lines.insert(3, f"tokens    {m.token_rule.describe()}")
    chain = _chain_line(h)
    if chain:
        lines.append(chain)
    return lines


def _chain_line(h: PlanHeader) -> str | None:
    """A chained plan's stage (plans/plan/chain.py): its turn and what it was compiled from."""
    from lmeval.plans import chain_link, turns_field

    link = chain_link(h.config)
    if link is not None:
        return (
            f"chain     turn {link.turn}: compiled from plan {link.parent_plan_hash[:12]} and its results "
            f"{link.parent_results_hash[:12]}"
        )
    if any(turns_field(t.config) for t in h.tasks):
        return "chain     turn 1 of a multi-turn plan (`lmeval run` compiles the next turns from its results)"
    return None


def show_chain(root: str, args: argparse.Namespace) -> int:
    """``lmeval show CHAIN_FOLDER``: each stage of a chained run, then each stage's plan as ``show`` prints one."""
    from lmeval.plans import open_chain

    opened = open_chain(root)  # each stage's plan checked to be this chain's before anything is shown
    chain = opened.chain
    print(f"chained run {root}: {len(chain.stages)} stages")
    for s in chain.stages:
        rh = s.results_hash[:12] if s.results_hash else "(not complete)"
        print(f"  stage {s.turn}: turn {s.turn}, plan {s.plan_hash[:12]}, results {s.results}/ {rh}")
    for s, plan in zip(chain.stages, opened.plans, strict=True):
        print(f"\n══ stage {s.turn} (turn {s.turn}) ══")
        with PlanReader(plan) as reader:
            print_header(reader.header, args.config)
            if args.examples > 0:
                print_examples(reader, args.examples, args.task)
            for _ in reader:
                pass
    return 0


def print_header(h: PlanHeader, with_config: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    for line in header_lines(h):
        console.print(line, markup=False)
    table = Table(show_header=True, header_style="bold")
    for col in ("task", "output_type", "n-shot", "docs", "instances", "metrics", "groups", "task_hash"):
        table.add_column(col)
    for t in h.tasks:
        metrics = ",".join(str(m.get("metric", m)) for m in t.metric_list)
        table.add_row(
            t.name,
            t.output_type,
            str(t.num_fewshot),
            str(t.n_docs),
            str(t.n_instances),
            metrics,
            ",".join(t.groups),
            t.task_hash[:12],
        )
    console.print(table)
    if h.groups:
        for g in h.groups:
            console.print(f"group {g.name}: {len(g.subtasks)} subtasks", markup=False)
    if with_config:
        console.print_json(json.dumps(_redacted(h.config), sort_keys=True))


def print_examples(reader: PlanReader, n: int, task: str | None) -> None:
    shown: dict[str, int] = {}
    names = [task] if task else [t.name for t in reader.header.tasks]
    out = sys.stdout
    for name in names:
        for rec in _instances(reader, name):
            if shown.get(name, 0) >= n:
                break
            shown[name] = shown.get(name, 0) + 1
            out.write(f"\n── {rec.task} doc {rec.doc_id} idx {rec.idx} ({rec.request_type}) ──\n")
            out.write(rec.context)
            if rec.request_type == "loglikelihood":
                out.write(f"⟦{rec.continuation}⟧\n")
            elif rec.request_type == "generate_until":
                out.write(f"\n⟦generate: {json.dumps(rec.generation_kwargs, sort_keys=True)}⟧\n")
                if rec.tools is not None:
                    out.write(tools_line(rec.tools, reader.header.task(name).config.get("tool_parser")))
            else:
                out.write("\n")
            for k, m in enumerate(rec.media or []):
                out.write(f"⟦image {k}: {media_line(m)}⟧\n")


def run(args: argparse.Namespace) -> int:
    import os

    from lmeval.plans import is_chain

    if os.path.isdir(args.plan) and is_chain(args.plan):
        return show_chain(args.plan, args)
    with PlanReader(args.plan) as reader:
        if args.task and args.task not in {t.name for t in reader.header.tasks}:
            from lmeval.plans import UserError

            raise UserError(f"{args.plan}: no task {args.task!r} in plan")
        if args.estimate is not None:
            from lmeval.cli.estimate import print_estimate
            from lmeval.cli.execute import split_store

            store, overrides = split_store(list(args.estimate))  # model overrides: a calibration slice on it
            return print_estimate(args.plan, reader, args, overrides, calibrate=bool(overrides), store=store)
        if args.cost or args.price_in is not None or args.price_out is not None:
            from lmeval.executor import cost_lines, plan_cost

            costs = plan_cost(reader.header, _instances(reader, args.task))  # a full pass: verifies the plan
            if args.task:
                costs = [c for c in costs if c.task == args.task]
            for line in cost_lines(costs, args.price_in, args.price_out):
                print(line)
            return 0
        if args.media:
            print_media(reader, args.task)  # a full pass: verifies the plan
            return 0
        if args.jsonl:
            write = sys.stdout.write
            for rec in _instances(reader, args.task):
                write(json_text(instance_json(rec), terminal=True) + "\n")
            return 0
        print_header(reader.header, args.config)
        if args.examples > 0:
            print_examples(reader, args.examples, args.task)
        # a full pass verifies the plan hash, so `show` also tells a user the file is intact
        for _ in reader:
            pass
    return 0


def _redacted(config: Any) -> Any:
    """``config`` with any key an older plan kept (``model.engine.api_key``) masked (plans/apikeys.py)."""
    from lmeval.plans import SECRET_KEYS

    model = config.get("model") if isinstance(config, dict) else None
    engine = model.get("engine") if isinstance(model, dict) else None
    if not isinstance(model, dict) or not isinstance(engine, dict) or not any(k in engine for k in SECRET_KEYS):
        return config
    masked = {k: ("<redacted>" if k in SECRET_KEYS else v) for k, v in engine.items()}
    return {**config, "model": {**model, "engine": masked}}
