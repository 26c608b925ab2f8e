"""The judge plan's contract (design note: ``compiler/judge/JUDGE.md``): the ``judge`` section of a judge
plan's config, and the two rules the compiler and the scorer share: the parse rule (a judge's output -> a
grade or None) and pairwise consistency (the verdicts of both orders -> one verdict).

A judge plan is an ordinary plan (generate_until Instances) whose header config holds ``judge``: mode, rubric
text, parse rule, generation settings and the judged run's identity (plan hash, results hash). Its tasks are
``judge_<task>``; each document is one judged document (same ``doc_id``) holding the question, answer(s) and
reference it was shown; pairwise documents have two Instances, ``idx`` 0 (A first) and 1 (swapped)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from lmeval.plans.errors import PlanError
from lmeval.plans.scored import JUDGED_BY
from lmeval.plans.vocab.regexes import compile_regex, groups_bounded, nested_quantifier, search_bounded

MODES = ("single", "pairwise")
TASK_PREFIX = "judge_"
MAX_PARSED_CHARS = 65536  # a judge's output is bounded by max_gen_toks; the parse rule reads at most this much
PARSE_SECONDS = 1.0  # one search of the parse rule over one output; longer: that output is unparsed (timed out)
VERDICTS = ("a", "b", "tie")


@dataclass(frozen=True)
class ParseRule:
    """``regex`` with exactly one group; single mode: the group is a number in ``[min, max]`` (null bounds: no
    range check, as FastChat takes 0 and 11 as given); pairwise: the group is a key of ``labels`` (label -> a | b |
    tie). The first match in the judge's output counts; ``fallback`` (one group too) is searched only when
    ``regex`` matches nowhere (FastChat's ``[[n]]`` then ``[n]``); ``label_order``: the verdict is the first label,
    in ``labels``' order, that any match names (FastChat looks for ``[[A]]``, then ``[[B]]``, then ``[[C]]``)."""

    regex: str
    min: float | None = None
    max: float | None = None
    labels: dict[str, str] = field(default_factory=dict)
    fallback: str | None = None
    label_order: bool = False  # pairwise: the first label in labels' order matched anywhere (FastChat: A, B, C)

    @classmethod
    def from_dict(cls, d: Any, mode: str, where: str = "judge.parse") -> ParseRule:
        if not isinstance(d, dict) or not isinstance(d.get("regex"), str):
            raise PlanError(f"{where}.regex: a regular expression (a string) is required")
        fallback = d.get("fallback")
        if fallback is not None and not isinstance(fallback, str):
            raise PlanError(f"{where}.fallback: a regular expression (a string) or null, got {fallback!r}")
        for key, rx in (("regex", d["regex"]), ("fallback", fallback)):
            if rx is not None:
                _check_regex(rx, f"{where}.{key}")
        labels = d.get("labels") or {}
        if not isinstance(labels, dict) or any(v not in VERDICTS for v in labels.values()):
            raise PlanError(f"{where}.labels: a map of label -> one of {', '.join(VERDICTS)}")
        if mode == "pairwise" and not labels:
            raise PlanError(f"{where}.labels: pairwise mode needs labels (e.g. {{A: a, B: b, C: tie}})")
        lo, hi = d.get("min"), d.get("max")
        for k, v in (("min", lo), ("max", hi)):
            finite = isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))
            if v is not None and (isinstance(v, bool) or not finite):
                raise PlanError(f"{where}.{k}: a finite number or null, got {v!r}")
        if lo is not None and hi is not None and lo > hi:
            raise PlanError(f"{where}: min {lo} is above max {hi}")
        order = d.get("label_order", False)
        if not isinstance(order, bool):
            raise PlanError(f"{where}.label_order: true or false, got {order!r}")
        return cls(d["regex"], lo, hi, {str(k): str(v) for k, v in labels.items()}, fallback, order)

    def to_dict(self) -> dict[str, Any]:
        """The plan's ``judge.parse``; ``fallback`` only when set, so other judge plans keep their hashes."""
        extra: dict[str, Any] = {"fallback": self.fallback} if self.fallback is not None else {}
        extra |= {"label_order": True} if self.label_order else {}
        return {"regex": self.regex, "min": self.min, "max": self.max, "labels": dict(self.labels)} | extra

    def grade(self, output: str | None) -> float | None:
        """Single mode: the number the judge's output gives, or None (no match, not a finite number, out of range);
        ``RegexTimeout`` when the search runs longer than ``PARSE_SECONDS`` (the caller counts it unparsed)."""
        m = self._match(output)
        if m is None:
            return None
        try:
            value = float(m)
        except ValueError:
            return None
        if not math.isfinite(value):  # "1e999", "inf", "nan": not a grade (never an infinite score)
            return None
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            return None
        return value

    def verdict(self, output: str | None) -> str | None:
        """Pairwise mode: a | b | tie from the judge's output, or None (no match, unknown label); ``RegexTimeout``
        as ``grade``."""
        if self.label_order and isinstance(output, str):
            found = set(groups_bounded(self.regex, output[:MAX_PARSED_CHARS], PARSE_SECONDS))
            return next((v for k, v in self.labels.items() if k in found), None)
        m = self._match(output)
        return None if m is None else self.labels.get(m)

    def _match(self, output: str | None) -> str | None:
        if not isinstance(output, str):
            return None
        text = output[:MAX_PARSED_CHARS]
        m = search_bounded(self.regex, text, PARSE_SECONDS)
        if m is None and self.fallback is not None:
            m = search_bounded(self.fallback, text, PARSE_SECONDS)
        return None if m is None or m.group(1) is None else m.group(1)


def _check_regex(rx: str, where: str) -> None:
    err = compile_regex(rx)
    if err is not None:
        raise PlanError(f"{where}: not a regular expression ({err})")
    hazard = nested_quantifier(rx)
    if hazard is not None:
        raise PlanError(f"{where}: {hazard}")
    groups = re.compile(rx).groups
    if groups != 1:
        raise PlanError(f"{where}: needs exactly one group, has {groups}")


def consistent(first: str | None, swapped: str | None) -> str | None:
    """The verdict of a pair judged in both orders: ``first`` judged (A=run, B=other), ``swapped`` judged with the
    answers' places exchanged, so its a/b mean the other way round. Both agree: that verdict; they disagree (position
    bias) or either is a tie: tie (MT-Bench's rule); either unparsed: None (counted as unparsed)."""
    if first is None or swapped is None:
        return None
    back = {"a": "b", "b": "a", "tie": "tie"}[swapped]
    return first if first == back else "tie"


# --- a judge-graded task (task config ``judged_by``, named by the scored wing, whose composites read it too):
# checked by the compiler, run by ``lmeval run``


@dataclass(frozen=True)
class JudgedBy:
    """A task graded by a judge: ``judges`` the conf/judge entries, the K-th grading turn K of a multi-turn task
    (one entry for a one-turn task); ``category_field`` the document field whose values get their own mean."""

    judges: list[str]
    category_field: str | None = None


def judged_by_problem(value: Any) -> str | None:
    """Why a task config's ``judged_by`` is not ``{judges: [NAME, ...], category_field: FIELD|null}``, or None."""
    if not isinstance(value, dict) or set(value) - {"judges", "category_field"}:
        return f"must be a mapping with judges (and category_field), got {value!r}"[:200]
    judges = value.get("judges")
    if not isinstance(judges, list) or not judges or not all(isinstance(j, str) and j for j in judges):
        return f"judges must be a non-empty list of judge names, got {judges!r}"[:200]
    cat = value.get("category_field")
    if cat is not None and (not isinstance(cat, str) or not cat):
        return f"category_field must name a document field, got {cat!r}"[:200]
    return None


def judged_by(task_config: Any) -> JudgedBy | None:
    """The judges of a judge-graded task (its config's ``judged_by``), or None (a task scored by its metrics)."""
    value = task_config.get(JUDGED_BY) if isinstance(task_config, dict) else None
    if value is None or judged_by_problem(value) is not None:
        return None
    return JudgedBy(list(value["judges"]), value.get("category_field"))


def judge_section(config: Any) -> dict[str, Any] | None:
    """The ``judge`` section of a plan's config, or None for a plan that is not a judge plan."""
    if not isinstance(config, dict):
        return None
    j = config.get("judge")
    return j if isinstance(j, dict) else None


# --- the grades written back into the judged run (an optional file of the scored-run contract, plans/scored/SCORED.md)
JUDGE_JSON = "judge.json"


def write_grades(results_dir: str, judge_plan_hash: str, entry: dict[str, Any]) -> None:
    """``judge.json`` of the judged run: judge plan hash -> its grades (other judges' entries kept), atomically."""
    from pathlib import Path

    from lmeval.common import json_text, write_atomic
    from lmeval.plans.limits import loads_json

    path = Path(results_dir) / JUDGE_JSON
    data: dict[str, Any] = {}
    if path.is_file():
        old = loads_json(path.read_bytes())
        if not isinstance(old, dict):
            raise PlanError(f"{path}: not a map of judge plan hash -> grades")
        data = old
    data[judge_plan_hash] = entry
    text = json_text(data, indent=2, sort_keys=True) + "\n"
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def add_metrics(results_dir: str, metrics: dict[str, dict[str, Any]], higher: dict[str, bool]) -> None:
    """The judged run's results.json with ``metrics`` (task -> ``"metric,judge"`` -> value) merged into its tasks'
    metric maps and ``higher_is_better``; written by results.json's one writer, ``plans.scored.write_results``."""
    from lmeval.plans.scored import read_scored, write_results

    run = read_scored(results_dir, samples=False).results
    for task, values in metrics.items():
        run.results.setdefault(task, {}).update(values)
        hib = run.higher_is_better.setdefault(task, {})
        hib.update({k.split(",")[0]: v for k, v in higher.items()})
    write_results(results_dir, run)
