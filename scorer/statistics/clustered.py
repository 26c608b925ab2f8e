"""Clustered standard errors and 95% intervals (results.json's ``intervals``, ``plans/scored/intervals.py``).

Questions come in clusters (MMLU's subjects, passages with several questions): errors within a cluster are
correlated, and the naive stderr understates the uncertainty (Miller 2024, "Adding Error Bars to Evals",
arXiv 2411.00640, eq. 4). For a mean ``m = Σ w_i x_i / W`` (``W = Σ w_i``) over documents ``i`` in clusters
``c`` (G of them), the cluster-robust (sandwich) variance is

    Var(m) = G / (G - 1) · Σ_c (Σ_{i in c} w_i (x_i - m))² / W²

With every document its own cluster and ``w_i = 1`` this is ``Σ (x_i - m)² / (n (n - 1))``: the square of
lm-eval's stderr (sample sd / sqrt(n)), so unclustered tasks keep their stderr exactly.

- a task's cluster is the document unless its config names a document field, ``metadata.cluster_key``
  (a task YAML's ``metadata:``, which lm-eval accepts and the plan holds: a plan without it keeps its hash);
- a group's clusters are its leaf tasks (MMLU: the 57 subjects), its weights its own aggregation's
  (``weight_by_size``: every document 1; else 1/n of its task, so each task counts once);
- the interval is the value ± z·stderr_clustered (z = 1.959964...), or, for aggregations that are not a
  mean (f1, bleu, perplexity, ...), the percentile interval of lm-eval's bootstrap replicates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import polars as pl

from lmeval.plans import DOCUMENT, FIELD_PREFIX, SUBTASK, GroupSummary, Intervals, MetricInterval
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.groups import leaf_tasks
from lmeval.scorer.planload import TaskDocs

LEVEL = 0.95
Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
CLUSTER_KEY = "cluster_key"  # the task config's metadata key naming the cluster field


@dataclass
class TaskSample:
    """What one task's intervals are computed from."""

    frames: list[pl.DataFrame]  # samples.parquet's rows of the task (one frame per filter)
    means: frozenset[str]  # metrics (results keys) aggregated by ``mean``
    boot: dict[str, tuple[float, float]] = field(default_factory=dict)  # "metric,filter" -> percentile interval
    unit: str = DOCUMENT
    cluster_of: dict[int, str] | None = None  # doc_id -> cluster label (None: each document its own)


def clustered_stderr(
    values: Sequence[float], clusters: Sequence[Hashable], weights: Sequence[float] | None = None
) -> tuple[float | None, int]:
    """(the sandwich stderr of the weighted mean, the number of clusters); None with fewer than 2 clusters."""
    w = [1.0] * len(values) if weights is None else [float(x) for x in weights]
    total = sum(w)
    if not values or total <= 0:
        return None, 0
    m = sum(wi * x for wi, x in zip(w, values, strict=True)) / total
    sums: dict[Hashable, float] = {}
    for wi, x, c in zip(w, values, clusters, strict=True):
        sums[c] = sums.get(c, 0.0) + wi * (x - m)
    g = len(sums)
    if g < 2:
        return None, g
    var = g / (g - 1) * sum(s * s for s in sums.values()) / (total * total)
    return math.sqrt(var), g


def cluster_key(task: str, config: dict[str, Any]) -> str | None:
    """The task's ``metadata.cluster_key`` (None when it names none); a one-line error when it is not a name."""
    meta = config.get("metadata")
    key = meta.get(CLUSTER_KEY) if isinstance(meta, dict) else None
    if key is not None and (not isinstance(key, str) or not key):
        raise ScoreError(f"task {task}: field metadata.{CLUSTER_KEY}: not a document field name ({key!r})")
    return key


def cluster_labels(task: str, key: str, td: TaskDocs, doc_ids: list[int]) -> dict[int, str]:
    """doc_id -> the document's ``key`` value (as JSON text); a one-line error naming a document without it."""
    out: dict[int, str] = {}
    for rec in td.records(sorted(set(doc_ids))):
        doc = rec.doc if isinstance(rec.doc, dict) else {}
        if key not in doc:
            raise ScoreError(
                f"task {task}: field metadata.{CLUSTER_KEY}: doc {rec.doc_id} has no field {key!r}"
                + (f" (it has: {', '.join(sorted(doc)[:8])})" if doc else "")
            )
        out[rec.doc_id] = json.dumps(doc[key], sort_keys=True, ensure_ascii=False)
    return out


def task_sample(
    task: str, config: dict[str, Any], td: TaskDocs, frames: list[pl.DataFrame], means: frozenset[str],
    boot: dict[str, tuple[float, float]],
) -> TaskSample:  # fmt: skip
    key = cluster_key(task, config)
    if key is None:
        return TaskSample(frames, means, boot)
    ids = sorted({int(d) for f in frames for d in f["doc_id"].to_list()})
    return TaskSample(frames, means, boot, FIELD_PREFIX + key, cluster_labels(task, key, td, ids))


def _values(ts: TaskSample, metric: str, filt: str) -> tuple[list[int], list[float]]:
    """(doc ids, per-document values) of a mean metric under a filter (empty when there are none)."""
    for f in ts.frames:
        if metric in f.columns and f.schema[metric] == pl.Float64 and f.height and f["filter"][0] == filt:
            kept = f.select("doc_id", metric).drop_nulls()
            return [int(d) for d in kept["doc_id"].to_list()], [float(x) for x in kept[metric].to_list()]
    return [], []


def _finite(*xs: float) -> bool:
    return all(math.isfinite(x) for x in xs)


def _normal(value: Any, se: float | None, g: int) -> MetricInterval | None:
    if se is None or not isinstance(value, (int, float)) or isinstance(value, bool) or not _finite(value, se):
        return None
    return MetricInterval(value - Z * se, value + Z * se, "normal", se, g)


def task_intervals(metrics: dict[str, Any], ts: TaskSample) -> dict[str, MetricInterval]:
    """``"metric,filter"`` -> interval for one task's results map."""
    out: dict[str, MetricInterval] = {}
    for key, value in metrics.items():
        if "," not in key or "_stderr," in key:
            continue
        metric, _, filt = key.partition(",")
        if metric in ts.means:
            ids, vals = _values(ts, metric, filt)
            if len(vals) < 2:
                continue
            labels = ids if ts.cluster_of is None else [ts.cluster_of[d] for d in ids]
            se, g = clustered_stderr(vals, labels)
            iv = _normal(value, se, g)
            if iv is not None:
                out[key] = iv
        elif key in ts.boot and _finite(*ts.boot[key]):
            out[key] = MetricInterval(ts.boot[key][0], ts.boot[key][1], "bootstrap")
    return out


def group_intervals(
    g: GroupSummary, groups: dict[str, GroupSummary], metrics: dict[str, Any], tasks: dict[str, TaskSample]
) -> dict[str, MetricInterval]:
    """A group's intervals: its leaf tasks' documents pooled, each leaf task one cluster, weighted as the
    group aggregates (a metric some leaf lacks per-document means for gets none)."""
    leaves = [t for t in leaf_tasks(g.name, groups) if t in tasks]
    out: dict[str, MetricInterval] = {}
    by_size = {str(c.get("metric")): bool(c.get("weight_by_size", True)) for c in g.aggregate_metric_list}
    for key, value in metrics.items():
        metric, _, filt = key.partition(",")
        if "," not in key or "_stderr," in key or metric not in by_size or not leaves:
            continue
        vals: list[float] = []
        labels: list[str] = []
        weights: list[float] = []
        for t in leaves:
            if metric not in tasks[t].means:
                break
            _, v = _values(tasks[t], metric, filt)
            if not v:
                continue
            vals += v
            labels += [t] * len(v)
            weights += [1.0 if by_size[metric] else 1.0 / len(v)] * len(v)
        else:
            if not vals:
                continue
            mean = sum(w * x for w, x in zip(weights, vals, strict=True)) / sum(weights)
            if not isinstance(value, (int, float)) or abs(mean - value) > 1e-9:  # not the group's own mean
                continue
            se, n = clustered_stderr(vals, labels, weights)
            iv = _normal(value, se, n)
            if iv is not None:
                out[key] = iv
    return out


def intervals(
    groups: list[GroupSummary], results: dict[str, dict[str, Any]], tasks: dict[str, TaskSample]
) -> Intervals:
    """results.json's ``intervals`` for every task of ``tasks`` and every group with an aggregation."""
    out = Intervals(level=LEVEL)
    for t, ts in tasks.items():
        out.cluster[t] = ts.unit
        m = task_intervals(results.get(t, {}), ts)
        if m:
            out.metrics[t] = m
    by = {g.name: g for g in groups}
    for g in groups:
        if not g.aggregate_metric_list or g.name not in results:
            continue
        out.cluster[g.name] = SUBTASK
        m = group_intervals(g, by, results[g.name], tasks)
        if m:
            out.metrics[g.name] = m
    return out
