"""How a task's ``metric_list`` resolves (as lm-eval's ConfigurableTask does).

A metric name resolves in the scorer's registry (``scorer.metrics.registry.METRICS``: name -> default
aggregation, direction, output types and implementation), whose built-ins are the contract's vocabulary
(``plans.scoring.METRIC_SPECS``, ``DEFAULT_METRICS``) the compiler checks tasks against."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmeval.plans import DEFAULT_METRICS, METRIC_ALIASES, METRIC_KEYS
from lmeval.scorer import usercode as pyref
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.metrics.aggregations import AGGREGATION_REGISTRY
from lmeval.scorer.metrics.registry import METRICS


@dataclass
class MetricEntry:
    name: str  # the metric's name in metric_list (lm-eval's key into its metric tables)
    builtin: str | None  # our implementation, or None for a user callable / process_results key
    fn: Callable[..., Any] | None = None  # user metric function (trusted reference)
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class TaskMetrics:
    metrics: list[MetricEntry]
    aggregation: dict[str, str | Callable[..., Any]]  # result key -> aggregation (grows with dict results)
    higher_is_better: dict[str, Any]
    process_results: Callable[..., Any] | None = None

    def names(self) -> list[str]:
        return [m.name for m in self.metrics]


def resolve_metrics(
    task: str, output_type: str, metric_list: list[dict[str, Any]], config: dict[str, Any], trust: pyref.Trust | None
) -> TaskMetrics:
    """Resolve a task's metrics, aggregations and directions; unknown names are errors here, not later."""
    pr_ref = config.get("process_results")
    process_results = None
    if pr_ref is not None:
        if not pyref.is_ref(pr_ref):
            raise ScoreError(f"task {task}: process_results must be a function reference, got {pr_ref!r}")
        process_results = pyref.load_ref(pr_ref, trust, f"task {task}: process_results")
    entries: list[MetricEntry] = []
    aggs: dict[str, str | Callable[..., Any]] = {}
    hib: dict[str, Any] = {}
    if not metric_list:
        if output_type not in DEFAULT_METRICS:
            raise ScoreError(f"task {task}: unknown output_type {output_type!r}")
        for name in DEFAULT_METRICS[output_type]:
            entries.append(MetricEntry(name, name))
            aggs[name] = METRICS[name].aggregation
            hib[name] = METRICS[name].higher_is_better
        return TaskMetrics(entries, aggs, hib, process_results)
    for i, mc in enumerate(metric_list):
        if not isinstance(mc, dict) or "metric" not in mc:
            raise ScoreError(f"task {task}: metric_list[{i}] has no 'metric'")
        raw = mc["metric"]
        kwargs = {k: v for k, v in mc.items() if k not in METRIC_KEYS}
        builtin: str | None = None
        fn = None
        if pyref.is_ref(raw):
            name = pyref.ref_name(raw)
            if process_results is None:
                fn = pyref.load_ref(raw, trust, f"task {task}: metric {name}")
        elif isinstance(raw, str):
            name = raw
            canon = METRIC_ALIASES.get(raw, raw)
            if canon in METRICS:
                builtin = canon
            elif process_results is None:
                raise ScoreError(
                    f"task {task}: unknown metric {raw!r} in metric_list (known: {', '.join(sorted(METRICS))})"
                )
        else:
            raise ScoreError(f"task {task}: metric_list[{i}].metric must be a name, got {raw!r}")
        if process_results is not None:
            builtin, fn = None, None
        metric = METRICS[builtin] if builtin is not None else None
        if metric is not None and metric.check_options is not None:
            metric.check_options(task, kwargs)
        if metric is not None and metric.task_options is not None:  # e.g. tool_call's parser and tools
            kwargs = {**kwargs, **metric.task_options(config)}
        for key, key_agg, key_hib in metric.extra_keys if metric is not None else ():
            aggs[key], hib[key] = _registered(task, key, key_agg), key_hib
        entries.append(MetricEntry(name, builtin, fn, kwargs))
        if "aggregation" in mc:
            agg = mc["aggregation"]
            if isinstance(agg, str):
                if agg not in AGGREGATION_REGISTRY:
                    raise ScoreError(f"task {task}: metric {name!r}: unknown aggregation {agg!r}")
                aggs[name] = agg
            elif pyref.is_ref(agg):
                aggs[name] = pyref.load_ref(agg, trust, f"task {task}: aggregation of {name}")
            else:
                raise ScoreError(f"task {task}: metric {name!r}: bad aggregation {agg!r}")
        else:
            b = METRICS.get(METRIC_ALIASES.get(name, name))
            if b is None:
                raise ScoreError(f"task {task}: metric {name!r} has no aggregation and none is known for it")
            aggs[name] = _registered(task, name, b.aggregation)
        if "higher_is_better" in mc:
            hib[name] = mc["higher_is_better"]
        else:
            b = METRICS.get(METRIC_ALIASES.get(name, name))
            hib[name] = b.higher_is_better if b else None
    return TaskMetrics(entries, aggs, hib, process_results)


def _registered(task: str, key: str, agg: str | Callable[..., Any]) -> str | Callable[..., Any]:
    """A metric's own aggregation, if registered in this process (a plugin's may not be: one line, not a
    KeyError once the documents are scored)."""
    if isinstance(agg, str) and agg not in AGGREGATION_REGISTRY:
        raise ScoreError(f"task {task}: metric {key!r}: its aggregation {agg!r} is not registered")
    return agg
