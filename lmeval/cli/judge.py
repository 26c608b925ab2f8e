"""``lmeval judge RESULTS --judge NAME``: compile the judge's prompts over a scored run into a judge plan (run it
with ``lmeval execute``); ``lmeval judge-score JUDGE_RESULTS --into RESULTS``: its grades back into the judged run
as metrics (``judge_score``, ``judge_unparsed``) and ``judge.json`` (compiler/judge/JUDGE.md)."""

from __future__ import annotations

import argparse
from typing import Any

from lmeval.plans import UserError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("judge", help="compile a judge plan (LLM-as-a-judge) over a scored run")
    p.add_argument("results", help="the scored results directory to judge")
    p.add_argument("--judge", required=True, help="a conf/judge entry (single_10, pairwise) or a judge YAML file")
    p.add_argument("--against", help="pairwise: the other scored run (answer B)")
    p.add_argument("--plan", help="the judged run's plan file (default: the one its results name)")
    p.add_argument("--out", help="judge plan file (default lmeval-plans/judge-<hash12>.msgpack)")
    p.add_argument("--dry-run", action="store_true", help="print the judge plan's requests, tokens and price only")
    p.add_argument("--price-in", type=float, metavar="USD", help="with --dry-run: price per million prompt tokens")
    p.add_argument("--price-out", type=float, metavar="USD", help="with --dry-run: price per million generated tokens")
    p.add_argument("overrides", nargs="*", help="judge config overrides KEY=VALUE (rubric=..., model.backend=hf)")
    p.set_defaults(func=run_judge)
    s = sub.add_parser("judge-score", help="write a judge run's grades back into the judged run")
    s.add_argument("judge_results", help="the judge plan's results directory (lmeval execute)")
    s.add_argument("--into", required=True, help="the judged run's scored results directory")
    s.add_argument("--plan", help="the judge plan file (default: the one its results name)")
    s.set_defaults(func=run_judge_score)


def run_judge(args: argparse.Namespace) -> int:
    from lmeval.compiler import compile_judge, load_judge_config, read_judged

    cfg = load_judge_config(args.judge, list(args.overrides))
    judged = read_judged(args.results, args.plan, cfg.tasks, cfg.limit)
    against = read_judged(args.against, None, cfg.tasks, cfg.limit) if args.against else None
    compiled = compile_judge(cfg, judged, against)
    h = compiled.header
    if args.dry_run:
        from lmeval.executor import cost_lines, plan_cost
        from lmeval.plans import InstanceRecord

        insts = [r for r in compiled.records if isinstance(r, InstanceRecord)]
        print(f"judge plan {h.plan_hash} ({cfg.name}, {cfg.mode}; not written)")
        for line in cost_lines(plan_cost(h, insts), args.price_in, args.price_out):
            print(line)
        return 0
    path = compiled.write(args.out)
    print(f"judge plan {h.plan_hash} -> {path} ({h.n_docs} documents, {h.n_instances} requests)")
    return 0


def run_judge_score(args: argparse.Namespace) -> int:
    from lmeval.plans import (
        PARSE_SECONDS,
        add_metrics,
        judge_section,
        plan_of,
        read_header,
        read_manifest,
        read_results,
        read_scored,
        write_grades,
    )
    from lmeval.scorer import judge_grades

    header = read_header(plan_of(args.judge_results, read_manifest(args.judge_results), args.plan))
    section = judge_section(header.config)
    if section is None:
        raise UserError(f"{args.judge_results}: not the results of a judge plan (compile one with `lmeval judge`)")
    target = read_scored(args.into, samples=False).results
    judged = section.get("judged") or {}
    if judged.get("plan_hash") != target.plan_hash:
        raise UserError(f"{args.into}: scored from plan {target.plan_hash[:12]}, but the judge plan judged "
                        f"{str(judged.get('plan_hash'))[:12]}")  # fmt: skip
    rows = read_results(args.judge_results).select("task", "doc_id", "idx", "response").to_dicts()
    try:
        graded = judge_grades(header, rows)
    except ValueError as e:
        raise UserError(f"{args.judge_results}: {e}") from None
    name = str(section.get("name"))
    metrics: dict[str, dict[str, Any]] = {}
    entry: dict[str, Any] = {"judge": name, "mode": section.get("mode"), "judge_plan_hash": header.plan_hash,
                             "rubric_hash": _sha(str(section.get("rubric"))), "tasks": {}}  # fmt: skip
    for tg in graded:
        m = tg.metrics()
        metrics[tg.task] = {f"{k},{name}": v for k, v in m.items()}
        entry["tasks"][tg.task] = {**m, "grades": {str(d): g for d, g in tg.grades.items()}}
        slow = ""
        if tg.timed_out:
            entry["tasks"][tg.task]["timed_out"] = tg.timed_out
            slow = (f", {len(tg.timed_out)} of them timed out (the parse rule ran over {PARSE_SECONDS:g} s; docs "
                    f"{', '.join(map(str, tg.timed_out[:5]))}{', ...' if len(tg.timed_out) > 5 else ''})")  # fmt: skip
        se = m["judge_score_stderr"]
        print(f"{tg.task}: judge_score {_num(m['judge_score'])} ± {_num(se)} over {m['judge_n']} documents, "
              f"{m['judge_unparsed']} unparsed{slow} ({name})")  # fmt: skip
    write_grades(args.into, header.plan_hash, entry)
    add_metrics(args.into, metrics, {"judge_score": True, "judge_unparsed": False})
    return 0


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()
