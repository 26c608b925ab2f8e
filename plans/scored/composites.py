"""Honest composites (#62): results.json's optional ``composites`` field (design note: ``plans/scored/SCORED.md``).

A composite is a number made of other numbers: a group's mean over its leaf tasks (lm-eval's aggregation, a
leaderboard average), a ``NAME@best``/``NAME@sweep`` group, a judge-graded task's score (the mean of its
grades). Over a partial run it is labelled, never silently passed off as the full one:

- ``partial``: a valid estimate of less than the whole: ``run.limit`` (the first documents of every member), a
  member with documents left out (``lmeval score --allow-partial``), a judge that graded fewer documents than
  were scored (a judge ``limit``).
- ``n/a``: not the composite at all: a member task without the metric (lm-eval averages the members that have
  it, a mean over another set of tasks; the missing one may be the hardest), a best-of or sweep group one of
  whose members has no score, a judge-graded task with no grades yet (its judge-graded metrics).

The values in ``results`` stay lm-eval's (parity); this field says how to read them:
``{"version": 1, "limit": L or null, "flags": {task or group: {"status", "reasons": [..], "metrics":
{"metric,filter": status}, "missing": {"metric,filter": [member tasks]}}}}``. The flags are a function of the
rest of results.json (``assess``): written by ``write_results`` from the run's content, so every writer (score,
judge-score) keeps them current; a reader reads back ``limit`` and recomputes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmeval.plans.scored.files import ScoredRun

COMPOSITES_VERSION = 1
PARTIAL, NA = "partial", "n/a"
JUDGE_PREFIX = "judge_"  # judge-score's metrics: judge_score,JUDGE, judge_n,JUDGE, judge_unparsed,JUDGE


@dataclass
class Flag:
    """How to read one task's or group's numbers (``composites.flags.NAME``)."""

    status: str
    """``n/a`` when every flagged metric is, else ``partial``."""
    reasons: list[str] = field(default_factory=list)
    """What is missing, one line each."""
    metrics: dict[str, str] = field(default_factory=dict)
    """``"metric,filter"`` (or a bare metric name with no value yet) -> ``partial`` or ``n/a``."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """``"metric,filter"`` -> the member tasks without it."""

    def of(self, key: str) -> str | None:
        """The status of ``key`` (``"metric,filter"``), None when it is not flagged."""
        return self.metrics.get(key) or self.metrics.get(key.partition(",")[0]) or self.metrics.get("*")

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reasons": self.reasons, "metrics": self.metrics, "missing": self.missing}


# the task config key naming a task's judges (plans/vocab/judging.py reads its value): their grades are its score
JUDGED_BY = "judged_by"


def judge_graded(config: Any) -> bool:
    """Whether a task config names its judges (``judged_by``, plans/vocab/judging.py): its headline is theirs."""
    return isinstance(config, dict) and bool(config.get(JUDGED_BY))


def _keys(m: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in m if "," in k and "_stderr," not in k)


def _leaves(name: str, tree: Mapping[str, list[str]], seen: frozenset[str] = frozenset()) -> list[str]:
    out: list[str] = []
    for c in tree.get(name, []):
        if c in tree and c not in seen:
            out.extend(_leaves(c, tree, seen | {name}))
        elif c not in tree:
            out.append(c)
    return out


def limit_text(limit: float | None) -> str:
    if limit is None:
        return ""
    if isinstance(limit, float) and limit < 1:
        return f"run.limit={limit:g}: the first {limit:.0%} of each task's documents"
    return f"run.limit={limit:g}: the first {limit:g} documents of each task"


def _judge_cover(m: Mapping[str, Any], key: str) -> tuple[int, int] | None:
    """(documents the judge graded, documents scored) when a judge key's grades cover fewer than were scored."""
    judge = key.partition(",")[2]
    n, unparsed, scored = m.get(f"judge_n,{judge}"), m.get(f"judge_unparsed,{judge}"), m.get("sample_len")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, unparsed, scored)):
        return None
    graded = int(n) + int(unparsed)  # type: ignore[arg-type]
    return (graded, int(scored)) if graded < int(scored) else None  # type: ignore[arg-type]


def assess(
    results: Mapping[str, Mapping[str, Any]],
    group_subtasks: Mapping[str, list[str]],
    aggregated: set[str],
    incomplete: Mapping[str, tuple[int, int]],
    configs: Mapping[str, Any],
    limit: float | None,
) -> dict[str, Flag]:
    """The flags of a run: ``aggregated`` the groups with an aggregation (results.json's ``groups``),
    ``incomplete`` task -> (documents left out, documents in the plan), ``configs`` task -> its config."""
    flags: dict[str, Flag] = {}

    def flag(name: str, key: str, status: str, reason: str) -> None:
        f = flags.setdefault(name, Flag(PARTIAL))
        if f.metrics.get(key) != NA:
            f.metrics[key] = status
        if reason and reason not in f.reasons:
            f.reasons.append(reason)

    for task, cfg in configs.items():  # judge-graded tasks: their grades' own composite
        m = results.get(task, {})
        judge_keys = [k for k in _keys(m) if k.startswith("judge_score,")]
        if judge_graded(cfg) and not judge_keys:
            flag(task, "judge_score", NA, "judge-graded, no grades yet (grade it: `lmeval run ... judge=MODEL`)")
        for k in judge_keys:
            cover = _judge_cover(m, k)
            if cover is not None:
                flag(task, k, PARTIAL, f"judge {k.partition(',')[2]} graded {cover[0]} of {cover[1]} documents")
    for g in group_subtasks:
        m = results.get(g, {})
        keys, leaves = _keys(m), _leaves(g, group_subtasks)
        if g in aggregated and not keys:
            flag(g, "*", NA, "a member has no score")
        for key in keys:
            have = [t for t in leaves if key in results.get(t, {})]
            if not have:  # best-of, sweep: the group's own keys
                continue
            lacking = [t for t in leaves if t not in have]
            if lacking:
                flag(g, key, NA, f"{key}: {len(lacking)} of {len(leaves)} member tasks have no score")
                flags[g].missing[key] = lacking
            for t in have:
                if (mk := key) in flags.get(t, Flag(PARTIAL)).metrics:
                    flag(g, mk, flags[t].metrics[mk], f"{t}: " + "; ".join(flags[t].reasons))
        for t in leaves:
            if t in incomplete:
                left, total = incomplete[t]
                for key in keys:  # a group without an aggregation has no number to label
                    flag(g, key, PARTIAL, f"{t}: {left} of {total} documents left out (missing results)")
        if limit is not None and keys:
            for key in keys:
                flag(g, key, PARTIAL, limit_text(limit))
    for f in flags.values():
        f.status = NA if all(s == NA for s in f.metrics.values()) else PARTIAL
    return dict(sorted(flags.items()))


def run_flags(run: ScoredRun) -> dict[str, Flag]:
    """``assess`` over a scored run's fields (documents left out: ``partial``; of how many: ``n-samples``)."""
    docs = {t: n.get("original", 0) for t, n in run.n_samples.items()}
    incomplete = {t: (p.incomplete_docs, docs.get(t, 0)) for t, p in run.partial.items()}
    return assess(run.results, run.group_subtasks, set(run.groups), incomplete, run.configs, run.limit)


def composites_dict(flags: dict[str, Flag], limit: float | None) -> dict[str, Any] | None:
    """results.json's ``composites`` (None: nothing to say, the field is omitted)."""
    if not flags and limit is None:
        return None
    return {"version": COMPOSITES_VERSION, "limit": limit, "flags": {k: f.to_dict() for k, f in flags.items()}}


def parse_limit(raw: Any, fail: Callable[[str, str], Exception]) -> float | None:
    """The ``limit`` recorded in results.json's ``composites`` (the flags are recomputed, ``assess``)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise fail("composites", "not an object")
    if raw.get("version") != COMPOSITES_VERSION:
        raise fail("composites.version", f"{str(raw.get('version'))[:20]}; this lmeval reads {COMPOSITES_VERSION}")
    limit = raw.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))):
        raise fail("composites.limit", "not a number")
    return limit
