"""``lmeval judge RESULTS --judge NAME``: compile the judge's prompts over a scored run into a judge plan (run it
with ``lmeval execute``); ``lmeval judge-score JUDGE_RESULTS --into RESULTS``: its grades back into the judged run
as metrics (``judge_score``, ``judge_unparsed``) and ``judge.json`` (compiler/judge/JUDGE.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from lmeval.common import text_sha256
from lmeval.plans import UserError

if TYPE_CHECKING:
    from lmeval.plans import OpenRun


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
    from lmeval.plans import (
        PARSE_SECONDS,
        add_metrics,
        judge_section,
        open_run,
        read_header,
        write_grades,
    )
    from lmeval.scorer import judge_grades

    run = open_run(args.judge_results, plan=args.plan, scored=False)  # an executed judge plan: not scored
    manifest, plan_path = run.manifest, run.plan_file()
    header = read_header(plan_path)
    section = judge_section(header.config)
    if section is None:
        raise UserError(f"{args.judge_results}: not the results of a judge plan (compile one with `lmeval judge`)")
    if manifest.plan_hash != header.plan_hash:
        raise UserError(f"{plan_path}: plan {header.plan_hash[:12]} is not the plan {args.judge_results} ran "
                        f"({manifest.plan_hash[:12]}); pass --plan")  # fmt: skip
    into = open_run(args.into, samples=False)  # its manifest and results.json
    assert into.scored is not None
    target = into.scored.results
    judged = section.get("judged") or {}
    if judged.get("plan_hash") != target.plan_hash:
        raise UserError(f"{args.into}: scored from plan {target.plan_hash[:12]}, but the judge plan judged "
                        f"{str(judged.get('plan_hash'))[:12]}")  # fmt: skip
    _check_judged_answers(args, section, judged)
    rows = _judge_rows(run, plan_path)
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


def _check_judged_answers(args: argparse.Namespace, section: dict[str, Any], judged: dict[str, Any]) -> None:
    """The run graded into is the one judged: its answers hash to the judge plan's ``judged.results_hash`` (the
    same rule ``lmeval judge`` recorded it by), not another run of the same plan or answers edited since."""
    from lmeval.compiler import read_judged

    tasks, limit = section.get("tasks"), section.get("limit")
    now = read_judged(args.into, args.judged_plan, tasks, limit).results_hash()
    want = str(judged.get("results_hash"))
    if now != want:
        raise UserError(
            f"{args.into}: its answers are not the ones the judge plan judged (answers hash {now[:12]}, judged "
            f"{want[:12]}): another run of the plan, or answers changed since `lmeval judge`"
        )


def _judge_rows(run: OpenRun, plan_path: str) -> list[dict[str, Any]]:
    """The judge run's rows, each one checked against the judge plan's Instances (a row for a document the judge
    plan does not hold is refused, as resume refuses it); an unfinished judge run is refused, not graded."""
    from lmeval.plans import check_rows, plan_keys, read_plan, read_row_keys

    parts, results, n_instances = run.parts(), run.where, run.manifest.n_instances
    check_rows(read_row_keys(parts), plan_keys(read_plan(plan_path).instances), plan_path, parts)
    df = run.rows()
    if not run.manifest.finished or df.height != n_instances:
        raise UserError(
            f"{results}: the judge run is unfinished ({df.height} of {n_instances} Instances answered); finish it "
            f"with `lmeval execute {plan_path} --out {results}` (it resumes), then judge-score"
        )
    return df.select("task", "doc_id", "idx", "response").to_dicts()


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _sha(text: str) -> str:
    return text_sha256(text)
