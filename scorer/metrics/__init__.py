"""Metrics: the typed registry (``METRICS``, ``register_metric``), the built-in metrics, and how a task's
``metric_list`` resolves against them. A built-in metric is one module of this package that registers itself
at import (``register_metric``, or ``registry.builtin`` for a metric of the contract's vocabulary) and one
name in the import line of built-ins below."""

# the built-in metrics, each registering itself (a new metric: its module, and its name here)
from lmeval.scorer.metrics import corpus, exact_match, jsonl_spec, loglikelihood, pass_at_k, rouge, tool_call
from lmeval.scorer.metrics.registry import METRICS, Metric, register_metric
from lmeval.scorer.metrics.resolve import MetricEntry, TaskMetrics, resolve_metrics

exact_match_np = exact_match.exact_match_np
exact_match_vector = exact_match.exact_match_vector
estimate_pass_at_k = pass_at_k.estimate
run_pass_at_k = pass_at_k.pass_at_k

__all__ = [
    "METRICS",
    "Metric",
    "MetricEntry",
    "TaskMetrics",
    "corpus",
    "estimate_pass_at_k",
    "exact_match",
    "exact_match_np",
    "exact_match_vector",
    "jsonl_spec",
    "loglikelihood",
    "pass_at_k",
    "register_metric",
    "resolve_metrics",
    "rouge",
    "run_pass_at_k",
    "tool_call",
]
