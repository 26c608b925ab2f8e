"""The metric registry: name -> ``Metric`` (lm-eval's METRIC_REGISTRY with its aggregation and direction, typed).

Each built-in metric registers itself from its own module of this package (``register_metric`` at import);
``scorer.metrics`` imports those modules in its one list of built-ins. A metric registered from elsewhere (a
test, a plugin) is scored by the same path as the built-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from lmeval.plans import METRIC_SPECS

# generate_until: (gold, filtered response, metric options, document) -> value, or a dict of several keys
GenerateFn = Callable[[Any, Any, dict[str, Any], dict[str, Any]], Any]
# the fast path beside it: (predictions, golds, options, cache) -> one value per document (a Float64 Series,
# or a list of Python values)
VectorFn = Callable[[pl.Series, pl.Series, dict[str, Any], dict[Any, Any] | None], pl.Series | list[Any]]


@dataclass(frozen=True)
class Metric:
    """One metric: its name, default aggregation and direction, output types, per-doc function and fast path.

    ``generate`` scores one generate_until document; metrics of the log-likelihood output types
    (multiple_choice, loglikelihood, loglikelihood_rolling) are computed together from one document's
    log-likelihoods by the scoring of that output type (``scorer.doc_metrics``), so they carry no function.
    ``vector`` (optional) computes ``generate`` over all documents at once and must agree with it exactly;
    ``pairs`` marks a corpus metric whose per-doc value is ``[gold, prediction]`` (the aggregation scores it);
    ``runs_code``, a metric that executes the generated programs (in ``scorer.sandbox``).
    """

    name: str
    aggregation: str | Callable[..., Any]
    higher_is_better: bool
    output_types: tuple[str, ...]
    generate: GenerateFn | None = None
    vector: VectorFn | None = None
    pairs: bool = False
    runs_code: bool = False


METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to ``METRICS``; a name already registered is refused (ValueError)."""
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name!r} is registered twice")
    METRICS[metric.name] = metric
    return metric


def builtin(
    name: str,
    generate: GenerateFn | None = None,
    vector: VectorFn | None = None,
    pairs: bool = False,
    runs_code: bool = False,
) -> Metric:
    """A built-in metric with the contract's defaults (``plans.scoring.METRIC_SPECS``: the compiler checks tasks
    against them), registered."""
    c = METRIC_SPECS[name]
    return register_metric(
        Metric(name, c.aggregation, c.higher_is_better, c.output_types, generate, vector, pairs, runs_code)
    )
