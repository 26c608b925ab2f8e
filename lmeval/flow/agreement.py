"""``lmeval compare JUDGE_A JUDGE_B``: two judges' grades of the same answers compared (#62 item 3), so a judge
swap is a measured event. Both folders are executed judge plans (``lmeval judge`` + ``execute``, or the
``RESULTS.judge-NAME-HASH/`` folders ``lmeval run ... judge=`` writes) that judged the same answers (the same
``judge.judged.results_hash``); per judged task, over the documents both graded: how many, the share of equal
grades, Cohen's kappa and Krippendorff's alpha (interval for grades, nominal for pairwise verdicts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lmeval.plans import UserError


@dataclass(frozen=True)
class Agreement:
    task: str
    n: int  # documents both judges graded
    equal: float | None  # share of documents with the same grade
    kappa: float | None
    alpha: float | None
    metric: str  # the alpha's distance: interval | nominal


def is_judge_run(results: str) -> bool:
    """Whether ``results`` holds an executed judge plan (its plan has a judge section)."""
    from lmeval.plans import judge_section, open_run, read_header

    try:
        run = open_run(results, scored=False)
        return judge_section(read_header(run.plan_file()).config) is not None
    except Exception:  # noqa: BLE001 - not a results folder we can read: not a judge run (compare says why)
        return False


def _graded(results: str) -> tuple[dict[str, Any], dict[str, dict[int, Any]]]:
    from lmeval.flow.grading import judge_run_rows
    from lmeval.plans import judge_section, open_run, read_header
    from lmeval.scorer import judge_grades

    run = open_run(results, scored=False)
    plan = run.plan_file()
    header = read_header(plan)
    section = judge_section(header.config) or {}
    graded = judge_grades(header, judge_run_rows(run, plan))
    return section, {tg.task: tg.grades for tg in graded}


def judge_agreement(a: str, b: str) -> list[Agreement]:
    """Per task both judges graded, their agreement. ``UserError`` when they judged different answers."""
    from lmeval.scorer import cohen_kappa, krippendorff_alpha

    sa, ga = _graded(a)
    sb, gb = _graded(b)
    ha, hb = (str((s.get("judged") or {}).get("results_hash")) for s in (sa, sb))
    if ha != hb:
        raise UserError(f"{b}: its judge graded other answers than {a}'s (answers hash {hb[:12]} vs {ha[:12]}); "
                        "judges are compared on the same answers")  # fmt: skip
    if sa.get("mode") != sb.get("mode"):
        raise UserError(f"{a} grades {sa.get('mode')} answers, {b} {sb.get('mode')}: not comparable")
    metric = "interval" if sa.get("mode") == "single" else "nominal"
    out = []
    for task in [t for t in ga if t in gb]:
        docs = [d for d in ga[task] if ga[task][d] is not None and gb[task].get(d) is not None]
        xa, xb = [ga[task][d] for d in docs], [gb[task][d] for d in docs]
        equal = sum(x == y for x, y in zip(xa, xb, strict=True)) / len(docs) if docs else None
        out.append(Agreement(task, len(docs), equal, cohen_kappa(xa, xb), krippendorff_alpha(xa, xb, metric), metric))
    return out
