"""``lmeval judge RESULTS --judge NAME``: compile the judge's prompts over a scored run into a judge plan (run it
with ``lmeval execute``); ``lmeval judge-score JUDGE_RESULTS --into RESULTS``: its grades back into the judged run
as metrics (``judge_score``, ``judge_unparsed``) and ``judge.json`` (compiler/judge/JUDGE.md; the library side is
``lmeval.flow.grading``)."""

from __future__ import annotations

import argparse


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
    s.add_argument("--judged-plan", help="the judged run's plan file (default: the one its results name)")
    s.set_defaults(func=run_judge_score)


def run_judge(args: argparse.Namespace) -> int:
    from lmeval.compiler import compile_judge, load_judge_config, read_judged
    from lmeval.plans import refuse_input_as_output, run_inputs

    if args.out:  # the judge plan never over the judged run's plan or files, nor the judge's YAML
        inputs = [*run_inputs(args.results, args.plan), *(run_inputs(args.against) if args.against else [])]
        refuse_input_as_output(args.out, [*inputs, args.judge])
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
    from lmeval.flow import grade_into

    _, lines = grade_into(args.judge_results, args.into, plan=args.plan, judged_plan=args.judged_plan)
    for line in lines:
        print(line)
    return 0
