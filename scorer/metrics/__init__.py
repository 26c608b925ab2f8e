"""Metrics and aggregations: the typed registries (``METRICS``/``register_metric``,
``AGGREGATION_REGISTRY``/``register_aggregation``), the built-ins, and how a task's ``metric_list`` resolves
against them. A built-in metric is one module of this package that registers itself at import
(``register_metric``, or ``registry.builtin`` for a metric of the contract's vocabulary) and one name in the
import line of built-ins below; a metric or aggregation registered from anywhere else (a test, a plugin) is
scored exactly like them. Nothing else in the scorer or the exporters names a metric: they read its ``Metric``.

The wing's scoring modules: ``doc_metrics`` (one document, lm-eval's process_results), ``choice_scores``
(multiple_choice over arrays), ``generate_scores`` (generate_until vectorised), ``aggregations``
(aggregations and stderr), ``filterscores`` (per-document values kept), ``passk`` and ``spec_scoring``."""

# the built-in metrics, each registering itself (a new metric: its module, and its name here)
from lmeval.scorer.metrics import corpus, exact_match, jsonl_spec, loglikelihood, pass_at_k, rouge, tool_call
from lmeval.scorer.metrics.aggregations import (
    AGGREGATION_REGISTRY,
    BOOTSTRAP_ITERS,
    Aggregation,
    aggregate,
    pooled_sample_stderr,
    register_aggregation,
    stderr,
    stderr_interval,
    unregister_aggregation,
    unweighted_mean_stderr,
    weighted_mean,
)
from lmeval.scorer.metrics.choice_scores import fast_mc, score_mc_fast
from lmeval.scorer.metrics.doc_metrics import generate_doc, loglikelihood_doc, mc_doc, rolling_doc
from lmeval.scorer.metrics.evidence import ChoiceArrays, ChoiceDoc
from lmeval.scorer.metrics.generate_scores import score_generate_fast
from lmeval.scorer.metrics.registry import (
    METRICS,
    Metric,
    metric_of_key,
    metrics_for,
    register_metric,
    unregister_metric,
)
from lmeval.scorer.metrics.resolve import MetricEntry, TaskMetrics, resolve_metrics
from lmeval.scorer.metrics.spec_scoring import aggregate_spec, score_spec_rows

exact_match_np = exact_match.exact_match_np
exact_match_vector = exact_match.exact_match_vector
estimate_pass_at_k = pass_at_k.estimate
run_pass_at_k = pass_at_k.pass_at_k

__all__ = [
    "AGGREGATION_REGISTRY",
    "BOOTSTRAP_ITERS",
    "Aggregation",
    "aggregate",
    "aggregate_spec",
    "fast_mc",
    "generate_doc",
    "loglikelihood_doc",
    "mc_doc",
    "pooled_sample_stderr",
    "rolling_doc",
    "score_generate_fast",
    "score_mc_fast",
    "score_spec_rows",
    "stderr",
    "stderr_interval",
    "unweighted_mean_stderr",
    "weighted_mean",
    "ChoiceArrays",
    "ChoiceDoc",
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
    "metric_of_key",
    "metrics_for",
    "pass_at_k",
    "register_aggregation",
    "register_metric",
    "unregister_aggregation",
    "unregister_metric",
    "resolve_metrics",
    "rouge",
    "run_pass_at_k",
    "tool_call",
]
