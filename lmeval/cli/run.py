"""``lmeval run [OVERRIDES]``: compile → execute → score in one command. A plan with a multi-turn task
(plans/plan/chain.py) is run stage by stage: each stage executed and scored, the next compiled from its results,
into one chained run folder (``chain.json``, ``turnK/``); a rerun resumes where the chain stopped. A judge-graded
task (``judged_by``) is graded by ``judge=MODEL`` in the same command (``lmeval.flow.judged``); without a judge its
stand-in metrics are not shown and one line says how to grade it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="compile, execute and score in one go; prints the results directory last")
    p.add_argument(
        "overrides",
        nargs="*",
        help="compile overrides, e.g. +task=arith model=tiny run.limit=50; judge=MODEL (and judge.KEY=VALUE) grades "
        "the judge-graded tasks (mt_bench) in the same command",
    )
    p.add_argument("--out", help="results directory (default results/<plan_hash12>-<model>/)")
    p.add_argument("--plan-out", help="plan path (default lmeval-plans/<name>-<hash12>.msgpack)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--part-size", type=int, metavar="N", help="rows per results part file (as `lmeval execute`)")
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="allow scoring to import user Python the plan references (checked against its sha256), "
        "as `lmeval score --trust-code`",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the engine's own output (else it goes to DIR/engine.log) and the plan checks' cost",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="compile and print the estimate (lmeval show --estimate) without running anything",
    )
    p.add_argument("--tokens-per-s", type=float, metavar="N", help="with --dry-run: the time at this rate")
    p.add_argument("--price-in", type=float, metavar="USD", help="with --dry-run: price per million prompt tokens")
    p.add_argument("--price-out", type=float, metavar="USD", help="with --dry-run: price per million generated tokens")
    p.set_defaults(func=run)
    n = sub.add_parser("next-turn", help="compile a chained plan's next stage from this stage's plan and results")
    n.add_argument("plan", help="stage K's plan file")
    n.add_argument("results", help="stage K's complete results directory (lmeval execute)")
    n.add_argument("--out", help="stage K+1's plan file (default: beside the plan, turnK+1-<hash12>.msgpack)")
    n.add_argument("located", nargs="*", help="where the model is, if the plan's config cannot say: model.path=DIR")
    n.set_defaults(func=next_turn)


def next_turn(args: argparse.Namespace) -> int:
    """``lmeval next-turn PLAN RESULTS``: what ``lmeval run`` does between two stages, for runs executed apart
    (``lmeval execute`` on another machine, batch APIs)."""
    from lmeval.compiler import compile_next
    from lmeval.plans import UserError, refuse_input_as_output, run_inputs

    if args.out:  # stage K+1 never over stage K's plan or results (nothing written yet)
        refuse_input_as_output(args.out, [args.plan, *run_inputs(args.results)])
    located = {}
    for item in args.located:
        key, eq, value = item.partition("=")
        if not eq or not key.startswith("model."):
            raise UserError(
                f"next-turn: {item!r}: expected model.KEY=VALUE (model.path, model.gguf_file, model.package)"
            )
        located[key] = value
    rhash, nxt = compile_next(args.plan, args.results, located)
    if nxt is None:
        print(f"results {rhash[:12]}: no conversation has another turn; the chain ends here")
        return 0
    h = nxt.header
    out = Path(args.out) if args.out else Path(args.plan).parent / f"turn{nxt.turn}-{h.plan_hash[:12]}.msgpack"
    path = nxt.write(out)
    print(f"turn {nxt.turn} plan {h.plan_hash} -> {path} ({h.n_docs} documents; parent results {rhash[:12]})")
    return 0


def run(args: argparse.Namespace) -> int:
    from lmeval import executor, scorer
    from lmeval.compiler import compile_located, execute_model_overrides
    from lmeval.flow import RunStage, check_judges, graded_tasks, split_judge
    from lmeval.plans import UserError, show_check_cost, turns_field

    if args.verbose:
        show_check_cost()

    compile_overrides, judge = split_judge(list(args.overrides))
    c = compile_located(compile_overrides)
    for warning in c.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    graded = graded_tasks(c.header)
    if judge is not None and not graded:
        raise UserError("judge=...: no task of this run is graded by a judge (a task config's judged_by); "
                        "`lmeval judge RESULTS --judge NAME` grades any generation task")  # fmt: skip
    if judge is not None:
        check_judges(graded, judge)  # before the model runs
    plan = c.write(args.plan_out)
    print(f"plan: {plan}")
    if args.dry_run:  # the bill, and nothing run (lmeval/cli/estimate.py)
        overrides = execute_model_overrides(compile_overrides, c.header.config)
        return _dry_run(str(plan), args, overrides, c.locations.get("run.store"))
    trust = bool(args.trust_code)  # the flag is the one switch that grants trust, as for `lmeval score`
    # the plan records user scoring code by content only: scoring finds its task folder under this run's
    # own run.include_path, as `lmeval score --include-path` would
    include = c.locations.get("run.include_path")
    scorer.check_user_code(plan, trust, include)  # before the model runs, not after
    overrides = execute_model_overrides(compile_overrides, c.header.config)
    if any(turns_field(t.config) for t in c.header.tasks):
        root, stages = _run_chain(args, c, overrides, trust, include, graded)
    else:
        results = executor.execute(
            str(plan),
            out=args.out,
            overrides=overrides,
            progress=not args.no_progress,
            verbose=args.verbose,
            part_size=args.part_size,
            store=c.locations.get("run.store"),
        )
        outcome = scorer.score_run(str(results), plan_path=str(plan), trust_code=trust, include_path=include)
        _print(outcome, graded)
        root, stages = results, [RunStage(1, str(plan), str(results))]
    if graded:
        _grade(args, graded, judge, stages)
    print(root)
    return 0


def _print(outcome: Any, graded: dict[str, Any]) -> None:
    """A stage's tables, a judge-graded task's stand-in metrics left out (``lmeval.flow.judged.judge_view``)."""
    import dataclasses

    from lmeval.cli.results_table import print_score
    from lmeval.flow import judge_view

    print_score(dataclasses.replace(outcome, run=judge_view(outcome.run, graded)) if graded else outcome)


def _grade(args: argparse.Namespace, graded: dict[str, Any], judge: Any, stages: list[Any]) -> None:
    """The judge-graded tasks: graded by the judge the command names, with their summary table; else one line
    each naming how to grade them."""
    from lmeval.cli.results_table import print_tables
    from lmeval.flow import how_to_grade, judge_stages, judge_view
    from lmeval.plans import read_scored

    if judge is None:
        for task, by in graded.items():
            print(how_to_grade(task, by, stages[0].results))
        return
    for where in judge_stages(stages, graded, judge, progress=not args.no_progress, verbose=args.verbose,
                              part_size=args.part_size):  # fmt: skip
        print_tables(judge_view(read_scored(where, samples=False).results, graded, only=True))


def _dry_run(plan: str, args: argparse.Namespace, overrides: list[str], store: Any) -> int:
    from lmeval.cli.estimate import print_estimate
    from lmeval.plans import PlanReader

    args.slice_docs = 1
    with PlanReader(plan) as reader:  # no calibration slice: a dry run executes nothing
        return print_estimate(plan, reader, args, overrides, calibrate=False, store=store)


def _run_chain(
    args: argparse.Namespace, c: Any, overrides: list[str], trust: bool, include: Any, graded: dict[str, Any]
) -> tuple[Path, list[Any]]:
    """Every stage of a chained plan: executed into ``ROOT/turnK`` (resumed when there), scored, and the next
    stage compiled from its results (``compiler.compile_next``), until no conversation has another turn."""
    import re

    from lmeval import executor, scorer
    from lmeval.compiler import compile_next
    from lmeval.flow import RunStage
    from lmeval.plans import Chain, UserError, is_chain, new_stage, read_chain, stage_dir, stage_plan_name, write_chain

    h = c.header
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", h.model.name).strip("_") or "model"
    root = Path(args.out) if args.out else Path("results") / f"{h.plan_hash[:12]}-{model}"
    chain = read_chain(root) if is_chain(root) else Chain()
    # every stage's plan is kept in the chain folder (stage 1's too, beside --plan-out), recorded relative to it:
    # the folder moved or copied elsewhere is the same chain (plans/plan/chain.py)
    turn, plan_hash, write_plan = 1, h.plan_hash, lambda p: c.write(str(p))
    stages: list[RunStage] = []
    while True:
        out = stage_dir(root, turn)
        old = chain.stage(turn)
        if old is not None and old.plan_hash != plan_hash and out.exists():
            raise UserError(
                f"{root}: holds a chained run whose turn {turn} is plan {old.plan_hash[:12]}, not "
                f"{plan_hash[:12]} (other settings or other answers); give another --out"
            )
        plan_k = write_plan(root / stage_plan_name(turn, plan_hash))
        if turn > 1:
            print(f"plan: {plan_k}")
        stage = new_stage(root, turn, plan_k, plan_hash)
        chain.put(stage)
        write_chain(root, chain)
        print(f"turn {turn}: plan {plan_hash[:12]} -> {out}", file=sys.stderr)
        results = executor.execute(
            str(plan_k),
            out=str(out),
            overrides=overrides,
            progress=not args.no_progress,
            verbose=args.verbose,
            part_size=args.part_size,
            store=c.locations.get("run.store"),
        )
        _print(scorer.score_run(str(results), plan_path=str(plan_k), trust_code=trust, include_path=include), graded)
        stages.append(RunStage(turn, str(plan_k), str(results)))
        stage.results_hash, nxt = compile_next(str(plan_k), str(results), c.locations)
        write_chain(root, chain)
        if nxt is None:
            break
        turn, plan_hash, write_plan = nxt.turn, nxt.header.plan_hash, nxt.write
    return root, stages
