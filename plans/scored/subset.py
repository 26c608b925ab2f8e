"""``subsample`` in results.json (optional, versioned on its own): the score of a ``run.subsample`` plan as the
estimate of the full run's, with its interval (design note: plans/scored/SCORED.md, "Honest subsets").

``{"version": 1, "tasks": {task: {"scheme", "n", "seed", "strata", "population", "sampled",
"metrics": {"metric,filter": {"estimate", "stderr", "ci95": [lo, hi]}}}}}``: ``population`` is the task's
documents in the full split, ``sampled`` the documents scored; ``estimate`` is the stratified mean (each
stratum weighed by its share of the population), ``stderr`` its standard error with the finite-population
correction, ``ci95`` the normal 95% interval (``scorer/statistics/subsample.py``). Only per-document numeric metrics
aggregated by ``mean`` get one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUBSAMPLE_VERSION = 1


@dataclass
class SubsetScores:
    tasks: dict[str, dict[str, Any]]  # task -> its record (above)

    def to_dict(self) -> dict[str, Any]:
        return {"version": SUBSAMPLE_VERSION, "tasks": dict(sorted(self.tasks.items()))}


def parse_subset(v: Any, fail: Any) -> SubsetScores | None:
    """``subsample`` of results.json (None when absent); ``fail(where, what)`` makes the one-line error."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise fail("subsample", "not an object")
    if v.get("version") != SUBSAMPLE_VERSION:
        raise fail("subsample.version", f"{str(v.get('version'))[:20]}; this lmeval reads {SUBSAMPLE_VERSION}")
    tasks = v.get("tasks")
    if not isinstance(tasks, dict):
        raise fail("subsample.tasks", "not an object")
    for t, rec in tasks.items():
        if not isinstance(rec, dict) or not isinstance(rec.get("metrics"), dict):
            raise fail(f"subsample.tasks.{t}", "not an object with metrics")
        for key, m in rec["metrics"].items():
            ci = m.get("ci95") if isinstance(m, dict) else None
            nums = [m.get("estimate"), m.get("stderr"), *(ci or [])] if isinstance(m, dict) else []
            if not (isinstance(ci, list) and len(ci) == 2 and all(_number(x) for x in nums)):
                raise fail(f"subsample.tasks.{t}.metrics.{key}", "not {estimate, stderr, ci95: [lo, hi]}")
    return SubsetScores(dict(tasks))


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) or x in ("nan", "inf", "-inf")
