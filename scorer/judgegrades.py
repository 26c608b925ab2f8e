"""A judge run's grades: the judge plan's parse rule (``plans.judging``) over the judge's raw outputs (the judge
run's result rows; never the judged answers, so an answer that writes "Rating: [[10]]" grades nothing), per
judged task the mean grade with its standard error (single) or A's win rate (pairwise, both orders consistent),
and the count of unparsed outputs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from lmeval.plans import TASK_PREFIX, ParseRule, PlanHeader, RegexTimeout, consistent, judge_section
from lmeval.scorer.mtbench import pairwise_summary


@dataclass
class TaskGrades:
    task: str  # the judged task
    mode: str
    grades: dict[int, Any] = field(default_factory=dict)  # doc id -> grade (single) / a|b|tie (pairwise) / None
    outputs: dict[int, list[str | None]] = field(default_factory=dict)  # doc id -> the judge's output(s), by idx
    timed_out: list[int] = field(default_factory=list)  # doc ids whose parse ran past PARSE_SECONDS (unparsed)

    @property
    def unparsed(self) -> int:
        return sum(g is None for g in self.grades.values())

    def metrics(self) -> dict[str, float | int | None]:
        """``judge_score`` and its stderr (single: mean grade; pairwise: A's win rate, a tie counting half),
        ``judge_n`` (documents graded) and ``judge_unparsed``; pairwise adds FastChat's ``judge_win_rate``,
        ``judge_loss_rate``, ``judge_win_rate_adjusted`` and the counts ``judge_win``/``judge_loss``/``judge_tie``."""
        if self.mode == "single":
            xs = [float(g) for g in self.grades.values() if g is not None]
        else:
            xs = [{"a": 1.0, "b": 0.0, "tie": 0.5}[g] for g in self.grades.values() if g is not None]
        n = len(xs)
        mean = sum(xs) / n if n else None
        se = (
            (math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) / math.sqrt(n))
            if n > 1 and mean is not None
            else None
        )
        out = {"judge_score": mean, "judge_score_stderr": se, "judge_n": n, "judge_unparsed": self.unparsed}
        if self.mode == "pairwise":  # FastChat's win rates (scorer.mtbench); judge_score is its adjusted one
            p = pairwise_summary(list(self.grades.values()))
            out |= {f"judge_{k}": v for k, v in p.rates().items()}
            out |= {"judge_win": p.win, "judge_loss": p.loss, "judge_tie": p.tie}
        return out


def judge_grades(header: PlanHeader, rows: list[dict[str, Any]]) -> list[TaskGrades]:
    """Per judged task its grades, from the judge plan's header and its result rows (task, doc_id, idx, response).
    ``ValueError`` when the plan is not a judge plan."""
    section = judge_section(header.config)
    if section is None:
        raise ValueError("not a judge plan (its config has no judge section; compile one with `lmeval judge`)")
    mode = str(section.get("mode"))
    rule = ParseRule.from_dict(section.get("parse"), mode)
    out: dict[str, TaskGrades] = {}
    for t in header.tasks:
        judged = t.name[len(TASK_PREFIX) :] if t.name.startswith(TASK_PREFIX) else t.name
        out[t.name] = TaskGrades(judged, mode)
    for r in rows:
        tg = out.get(str(r["task"]))
        if tg is None:
            continue
        outs = tg.outputs.setdefault(int(r["doc_id"]), [None, None] if mode == "pairwise" else [None])
        if 0 <= int(r["idx"]) < len(outs):
            outs[int(r["idx"])] = r.get("response")
    for tg in out.values():
        for doc_id, outs in sorted(tg.outputs.items()):
            try:
                if mode == "single":
                    tg.grades[doc_id] = rule.grade(outs[0])
                else:
                    tg.grades[doc_id] = consistent(rule.verdict(outs[0]), rule.verdict(outs[1]))
            except RegexTimeout:
                tg.grades[doc_id] = None
                tg.timed_out.append(doc_id)
    return list(out.values())
