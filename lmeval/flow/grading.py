"""A judge run's grades into the run it judged (``lmeval judge-score``, and ``lmeval run ... judge=MODEL``): the
judge plan's parse rule over the judge's outputs (``scorer.judge_grades``), written as metrics (``METRIC,JUDGE``)
into the judged run's results.json and per document into its judge.json (compiler/judge/JUDGE.md), after checking
that the judged run is the one the judge plan judged and that the judge run is finished and its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lmeval.common import text_sha256
from lmeval.plans import UserError

if TYPE_CHECKING:
    from lmeval.plans import OpenRun


def grade_into(
    judge_results: str, into: str, plan: str | None = None, judged_plan: str | None = None
) -> tuple[list[Any], list[str]]:
    """The judge run ``judge_results`` graded into the scored run ``into``: its grades per judged task
    (``scorer.judgegrades.TaskGrades``) and one line per task to print. ``UserError`` (one line) for a run that is
    not the judged one, an unfinished judge run, a row the judge plan does not hold."""
    from lmeval.plans import PARSE_SECONDS, add_metrics, judge_section, open_run, read_header, write_grades
    from lmeval.scorer import judge_grades

    run = open_run(judge_results, plan=plan, scored=False)  # an executed judge plan: not scored
    manifest, plan_path = run.manifest, run.plan_file()
    header = read_header(plan_path)
    section = judge_section(header.config)
    if section is None:
        raise UserError(f"{judge_results}: not the results of a judge plan (compile one with `lmeval judge`)")
    if manifest.plan_hash != header.plan_hash:
        raise UserError(f"{plan_path}: plan {header.plan_hash[:12]} is not the plan {judge_results} ran "
                        f"({manifest.plan_hash[:12]}); pass --plan")  # fmt: skip
    target = open_run(into, samples=False).scored  # its manifest and results.json
    assert target is not None
    judged = section.get("judged") or {}
    if judged.get("plan_hash") != target.results.plan_hash:
        raise UserError(f"{into}: scored from plan {target.results.plan_hash[:12]}, but the judge plan judged "
                        f"{str(judged.get('plan_hash'))[:12]}")  # fmt: skip
    _check_judged_answers(into, judged_plan, section, judged)
    rows = judge_run_rows(run, plan_path)
    try:
        graded = judge_grades(header, rows)
    except ValueError as e:
        raise UserError(f"{judge_results}: {e}") from None
    name = str(section.get("name"))
    metrics: dict[str, dict[str, Any]] = {}
    entry: dict[str, Any] = {"judge": name, "mode": section.get("mode"), "judge_plan_hash": header.plan_hash,
                             "rubric_hash": text_sha256(str(section.get("rubric"))),
                             "judge_model": _judge_model(header, manifest), "tasks": {}}  # fmt: skip
    lines = []
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
        lines.append(f"{tg.task}: judge_score {_num(m['judge_score'])} ± {_num(se)} over {m['judge_n']} documents, "
                     f"{m['judge_unparsed']} unparsed{slow} ({name})")  # fmt: skip
    write_grades(into, header.plan_hash, entry)
    add_metrics(into, metrics, {"judge_score": True, "judge_unparsed": False})
    return graded, lines


def _check_judged_answers(into: str, judged_plan: str | None, section: dict[str, Any], judged: dict[str, Any]) -> None:
    """The run graded into is the one judged: its answers hash to the judge plan's ``judged.results_hash`` (the
    same rule ``lmeval judge`` recorded it by), not another run of the same plan or answers edited since."""
    from lmeval.compiler import read_judged

    tasks, limit = section.get("tasks"), section.get("limit")
    now = read_judged(into, judged_plan, tasks, limit).results_hash()
    want = str(judged.get("results_hash"))
    if now != want:
        raise UserError(
            f"{into}: its answers are not the ones the judge plan judged (answers hash {now[:12]}, judged "
            f"{want[:12]}): another run of the plan, or answers changed since `lmeval judge`"
        )


def judge_run_rows(run: OpenRun, plan_path: str) -> list[dict[str, Any]]:
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


def _judge_model(header: Any, manifest: Any) -> dict[str, Any]:
    """Who judged: the judge plan's model identity (name, Hub id and revision, config and tokenizer hashes) and what
    the judge run ran (backend; an API's model name as the run was told it, ``engine.model``)."""
    m, run = header.model, manifest.model if isinstance(manifest.model, dict) else {}
    served = (manifest.engine_args or {}).get("model") if isinstance(manifest.engine_args, dict) else None
    return {"name": m.name, "hub_id": m.path, "revision": m.revision, "config_hash": m.config_hash,
            "tokenizer_hash": m.tokenizer_hash, "backend": manifest.backend, "ran_config_hash": run.get("config_hash"),
            "api_model": served}  # fmt: skip


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:.4f}"
