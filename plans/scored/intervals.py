"""results.json's optional ``intervals`` field (design note: ``plans/scored/SCORED.md``, "intervals"): per task or
group and metric, the clustered standard error and a 95% interval, beside lm-eval's stderr (kept as it is).

``{"version": 1, "level": 0.95, "cluster": {task or group: unit}, "metrics": {task or group: {"metric,filter":
{"stderr_clustered", "clusters", "low", "high", "method"}}}}``. ``unit`` is ``"document"`` (each document its
own cluster), ``"doc.FIELD"`` (the task's ``metadata.cluster_key``: documents sharing the field's value) or
``"subtask"`` (a group: each leaf task one cluster). ``method`` is ``"normal"`` (value ± z·stderr_clustered)
or ``"bootstrap"`` (the 2.5th and 97.5th percentiles of lm-eval's bootstrap replicates: aggregations that are
not a mean; ``stderr_clustered`` and ``clusters`` are then null).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INTERVALS_VERSION = 1
DOCUMENT, SUBTASK, FIELD_PREFIX = "document", "subtask", "doc."
METHODS = ("normal", "bootstrap")


@dataclass
class MetricInterval:
    """One metric's interval (``intervals.metrics.TASK."metric,filter"``)."""

    low: float
    """The interval's lower end."""
    high: float
    """The interval's upper end."""
    method: str
    """``normal`` or ``bootstrap`` (``METHODS``)."""
    stderr_clustered: float | None = None
    """The cluster-robust (sandwich) standard error of a mean; None for a bootstrapped aggregation."""
    clusters: int | None = None
    """How many clusters the documents fell into; None for a bootstrapped aggregation."""

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "method": self.method,
                "stderr_clustered": self.stderr_clustered, "clusters": self.clusters}  # fmt: skip


@dataclass
class Intervals:
    """``intervals``: written by every ``lmeval score`` since #40 (absent in older files)."""

    cluster: dict[str, str] = field(default_factory=dict)
    """Task or group -> its cluster unit (``document``, ``doc.FIELD``, ``subtask``)."""
    metrics: dict[str, dict[str, MetricInterval]] = field(default_factory=dict)
    """Task or group -> ``"metric,filter"`` -> its interval."""
    level: float = 0.95
    """The intervals' coverage."""
    version: int = INTERVALS_VERSION
    """The field's own version; a reader refuses another."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "level": self.level,
            "cluster": dict(sorted(self.cluster.items())),
            "metrics": {t: {k: v.to_dict() for k, v in sorted(m.items())} for t, m in sorted(self.metrics.items())},
        }

    def get(self, task: str, key: str) -> MetricInterval | None:
        return self.metrics.get(task, {}).get(key)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_intervals(v: Any, fail: Any) -> Intervals | None:
    """``intervals`` of results.json (None when absent); ``fail(where, what)`` makes the one-line error."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise fail("intervals", "not an object")
    if v.get("version") != INTERVALS_VERSION:
        raise fail("intervals.version", f"{str(v.get('version'))[:20]}; this lmeval reads {INTERVALS_VERSION}")
    level = v.get("level", 0.95)
    if not _number(level) or not 0 < level < 1:
        raise fail("intervals.level", "not a number between 0 and 1")
    cluster = v.get("cluster", {})
    if not isinstance(cluster, dict) or not all(isinstance(u, str) for u in cluster.values()):
        raise fail("intervals.cluster", "not an object of strings")
    metrics = v.get("metrics", {})
    if not isinstance(metrics, dict):
        raise fail("intervals.metrics", "not an object")
    out: dict[str, dict[str, MetricInterval]] = {}
    for task, m in metrics.items():
        if not isinstance(m, dict):
            raise fail(f"intervals.metrics.{task}", "not an object")
        out[task] = {key: _interval(e, f"intervals.metrics.{task}.{key}", fail) for key, e in m.items()}
    return Intervals(dict(cluster), out, float(level))


def _interval(e: Any, where: str, fail: Any) -> MetricInterval:
    if not isinstance(e, dict):
        raise fail(where, "not an object")
    for k in ("low", "high"):
        if not _number(e.get(k)):
            raise fail(f"{where}.{k}", "not a number")
    if e.get("method") not in METHODS:
        raise fail(f"{where}.method", f"not one of {', '.join(METHODS)}")
    se, n = e.get("stderr_clustered"), e.get("clusters")
    if se is not None and not _number(se):
        raise fail(f"{where}.stderr_clustered", "not a number")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        raise fail(f"{where}.clusters", "not an integer")
    return MetricInterval(float(e["low"]), float(e["high"]), str(e["method"]),
                          None if se is None else float(se), n)  # fmt: skip
