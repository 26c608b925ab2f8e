"""The metric registry: name -> ``Metric`` (lm-eval's METRIC_REGISTRY with its aggregation and direction, typed).

A ``Metric`` carries everything the scorer and the exporters know about a metric: its per-document function
for each output type it applies to (``generate`` for generate_until, ``choices`` for multiple_choice,
``loglikelihood`` and ``rolling`` for the other log-likelihood types), their vectorised forms, its default
aggregation and direction, and how it is presented (a proportion, bounds, an integer in lm-eval's samples).
No module tests a metric's name: each reads these fields.

Each built-in metric registers itself from its own module of this package (``register_metric`` at import);
``scorer.metrics`` imports those modules in its one list of built-ins. A metric registered from elsewhere (a
test, a plugin) is scored by the same path as the built-ins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from lmeval.plans import (
    BUILT_IN_METRICS,
    METRIC_SPECS,
    MetricSpec,
    RegistrationError,
    add_metric_spec,
    remove_metric_spec,
)
from lmeval.scorer.metrics.evidence import ChoiceArrays, ChoiceDoc
from lmeval.scorer.metrics.plugin import guarded, plugin_problem

# generate_until: (gold, filtered response, metric options, document) -> value, or a dict of several keys
GenerateFn = Callable[[Any, Any, dict[str, Any], dict[str, Any]], Any]
# the fast path beside it: (predictions, golds, options, cache) -> one value per document (a Float64 Series,
# or a list of Python values)
VectorFn = Callable[[pl.Series, pl.Series, dict[str, Any], dict[Any, Any] | None], pl.Series | list[Any]]
# multiple_choice: one document's log-likelihoods, choices and gold -> its value
ChoiceFn = Callable[[ChoiceDoc], Any]
# multiple_choice, vectorised: (documents x choices) arrays -> one value per document (floats, or a list of
# items for a ``pairs`` metric); it must agree with ``choices`` on every document it is given
ChoiceVectorFn = Callable[[ChoiceArrays], "np.ndarray | list[Any]"]
# an argmax metric's value per choice, as the report shows it: (log-likelihood, choice text, the choice's
# unconditional log-likelihood or None, its continuation token count or None) -> the compared value or None
ComparedFn = Callable[[float, str, "float | None", "int | None"], "float | None"]
# generate_until with several targets, lm-eval's one call on all of them: (golds, response, options) -> value
SeveralFn = Callable[[list[Any], Any, dict[str, Any]], Any]
# a metric's options checked when the task resolves: (task, options) -> None, or raises ScoreError
CheckFn = Callable[[str, dict[str, Any]], None]
# options a metric takes from its task's config: config -> options added to the metric_list entry's
TaskOptionsFn = Callable[[dict[str, Any]], dict[str, Any]]
# loglikelihood: (log-likelihood, is_greedy) -> value
LoglikelihoodFn = Callable[[float, bool], Any]
# loglikelihood_rolling: (log-likelihood, the target text) -> value
RollingFn = Callable[[float, str], Any]


@dataclass(frozen=True)
class Metric:
    """One metric: its name, default aggregation and direction, output types, per-doc functions, fast paths and
    presentation.

    ``generate`` scores one generate_until document and ``vector`` (optional) computes it over all documents
    at once; ``choices`` scores one multiple_choice document from its log-likelihoods and ``choices_vector``
    (optional) over (documents x choices) arrays; ``loglikelihood`` and ``rolling`` the other log-likelihood
    output types. Each vectorised form must agree with its per-document function exactly. A metric
    computes, in each output type's document scoring, in the order metrics were registered (lm-eval's
    ``process_results`` order for the built-ins).
    ``pairs`` marks a metric whose per-doc value is an item the aggregation scores (``[gold, prediction]``
    of a corpus metric); ``runs_code``, a metric that executes the generated programs (in
    ``scorer.sandbox``). Presentation: ``unit`` a proportion in [0, 1] (shown as a percentage, exported with
    those bounds), ``bounds`` other fixed bounds of its value, ``int_in`` the output types whose per-document
    value lm-eval logs as an integer, ``key_prefix`` what the result keys of a metric of several keys start
    with (``pass@`` of pass_at_k's ``pass@1``), ``compared`` the value per choice whose argmax an argmax metric
    takes (the report's Formats section shows it); ``bootstrap_cap`` the most bootstrap iterations lm-eval spends on its
    stderr (the sacrebleu metrics). lm-eval's generate_until rules: ``generate_several`` scores a document
    of several targets in one call (without it each target is scored and any hit counts), ``raw_gold`` keeps
    the gold's own type (lm-eval casts it to the response's otherwise). Resolving a task: ``check_options``
    checks the metric_list entry's options, ``task_options`` adds options from the task's config, and
    ``extra_keys`` names other result keys the metric returns with their (aggregation, higher_is_better).
    """

    name: str
    aggregation: str | Callable[..., Any]
    higher_is_better: bool
    output_types: tuple[str, ...]
    generate: GenerateFn | None = None
    vector: VectorFn | None = None
    pairs: bool = False
    runs_code: bool = False
    choices: ChoiceFn | None = None
    choices_vector: ChoiceVectorFn | None = None
    loglikelihood: LoglikelihoodFn | None = None
    rolling: RollingFn | None = None
    unit: bool = False
    bounds: tuple[float, float] | None = None
    int_in: tuple[str, ...] = ()
    bootstrap_cap: int | None = None
    key_prefix: str | None = None
    compared: ComparedFn | None = None
    generate_several: SeveralFn | None = None
    raw_gold: bool = False
    check_options: CheckFn | None = None
    task_options: TaskOptionsFn | None = None
    extra_keys: tuple[tuple[str, str, bool], ...] = ()

    def per_doc(self, output_type: str) -> Callable[..., Any] | None:
        """This metric's per-document function for ``output_type`` (None: it does not score that type)."""
        return {
            "generate_until": self.generate,
            "multiple_choice": self.choices,
            "loglikelihood": self.loglikelihood,
            "loglikelihood_rolling": self.rolling,
        }.get(output_type)


METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to ``METRICS``; a name already registered is refused (``RegistrationError``, a
    ValueError). A metric the contract does not name (a plugin's) is checked first (``plugin.plugin_problem``:
    names results can carry, no other metric's keys, a known aggregation) and registered guarded
    (``plugin.guarded``); the registered metric is returned."""
    if metric.name in METRICS:
        raise RegistrationError(f"metric {metric.name!r} is registered twice")
    if metric.name not in BUILT_IN_METRICS:
        problem = plugin_problem(metric, METRICS.values())
        if problem is not None:
            raise RegistrationError(f"metric {metric.name!r}: {problem}")
        metric = guarded(metric)
    METRICS[metric.name] = metric
    if metric.name not in METRIC_SPECS:  # a new name: the compile checks accept it from now on
        agg = metric.aggregation if isinstance(metric.aggregation, str) else metric.aggregation.__name__
        add_metric_spec(metric.name, MetricSpec(agg, metric.higher_is_better, metric.output_types))
    return metric


def unregister_metric(name: str) -> None:
    """Remove a metric ``register_metric`` added from outside the built-ins (a test, a plugin), from the
    registry and the compile checks; the contract's own metrics are refused (ValueError)."""
    remove_metric_spec(name)
    METRICS.pop(name, None)


def metrics_for(output_type: str) -> list[Metric]:
    """The registered metrics that score ``output_type`` documents, in registration order."""
    return [m for m in METRICS.values() if m.per_doc(output_type) is not None]


def metric_of_key(key: str) -> Metric | None:
    """The metric a result key (``acc``, ``pass@1``, ``rouge2``) comes from; None for one of user code."""
    found = METRICS.get(key)
    if found is not None:
        return found
    return next((m for m in METRICS.values() if m.key_prefix and key.startswith(m.key_prefix)), None)


def builtin(name: str, **fields: Any) -> Metric:
    """A built-in metric with the contract's defaults (``plans.scoring.METRIC_SPECS``: the compiler checks tasks
    against them) and ``fields`` (its functions and presentation), registered."""
    c = METRIC_SPECS[name]
    return register_metric(Metric(name, c.aggregation, c.higher_is_better, c.output_types, **fields))
