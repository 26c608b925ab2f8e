"""Per-document scoring in Python with lm-eval's ``process_results`` semantics (the reference path).

The vectorised paths beside the metrics (``Metric.vector``, e.g. ``scorer.metrics.exact_match``) must agree
with these functions on every document; they are used for everything the fast paths do not cover (lists of
targets, NaN log-likelihoods, user metrics,
``process_results`` references, exotic filter outputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lmeval.plans import unconditional_metrics
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.metrics.evidence import ChoiceDoc
from lmeval.scorer.metrics.registry import METRICS, metrics_for
from lmeval.scorer.metrics.resolve import TaskMetrics


def _call_gen_metric(
    builtin: str | None, fn: Any, gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]
) -> Any:
    metric = METRICS.get(builtin) if builtin is not None else None
    if metric is not None and metric.generate is not None:
        return metric.generate(gold, result, kwargs, doc)
    if fn is not None:
        try:
            return fn(references=[gold], predictions=[result], **kwargs)
        except TypeError:
            return fn([gold, result])
    if builtin is not None:
        raise ScoreError(f"metric {builtin!r} does not apply to generate_until tasks")
    raise ScoreError("metric has no implementation")


def _raw_gold(tm: TaskMetrics) -> bool:
    """Whether a metric of the task keeps the gold's own type (lm-eval's bypass)."""
    return any(m.name in METRICS and METRICS[m.name].raw_gold for m in tm.metrics)


def generate_doc(
    tm: TaskMetrics,
    doc: dict[str, Any],
    target: Any,
    choices: list[str] | None,
    result: Any,
    multiple_target: bool,
) -> dict[str, Any]:
    """lm-eval's process_results for generate_until, on one document's (first instance's) filtered response."""
    gold = target
    if choices is not None:
        gold = choices[gold]
    elif multiple_target:
        gold = list(gold)
    elif type(gold) is not type(result) and not (_raw_gold(tm) or isinstance(result, list)):
        gold = type(result)(gold)
    out: dict[str, Any] = {}
    for entry in tm.metrics:
        if multiple_target:
            if not isinstance(gold, list):
                gold = [gold]
            several = METRICS[entry.builtin].generate_several if entry.builtin is not None else None
            if several is not None:
                score: Any = several(gold, result, entry.kwargs)
            else:
                scores = []
                for g in gold:
                    r = _call_gen_metric(entry.builtin, entry.fn, g, result, entry.kwargs, doc)
                    if isinstance(r, dict):
                        r = r[entry.name]
                    scores.append(r)
                score = 1.0 if any(scores) else 0.0
        else:
            score = _call_gen_metric(entry.builtin, entry.fn, gold, result, entry.kwargs, doc)
        if isinstance(score, dict):
            for k, v in score.items():
                out[k] = v
                if k not in tm.aggregation and entry.name in tm.aggregation:
                    tm.aggregation[k] = tm.aggregation[entry.name]
                if k not in tm.higher_is_better and entry.name in tm.higher_is_better:
                    tm.higher_is_better[k] = tm.higher_is_better[entry.name]
        else:
            out[entry.name] = score
    return out


def mc_gold(target: Any, choices: list[str]) -> tuple[Any, bool]:
    """The gold index (or list of them) as lm-eval's process_results sees it, and whether it was invalid."""
    gold = target
    if isinstance(gold, list):
        gold = [i if i < len(choices) else -100 for i in gold]
        return gold, -100 in gold
    if isinstance(gold, bool):
        gold = int(gold)
    if isinstance(gold, int):
        gold = gold if gold < len(choices) else -100
    elif isinstance(gold, str):
        gold = choices.index(gold) if gold in choices else -100
    return gold, gold == -100


def mc_doc(
    tm: TaskMetrics,
    target: Any,
    choices: list[str],
    results: Sequence[Any],
    multiple_target: bool,
    n_tokens: Sequence[int | None] | None = None,
) -> dict[str, Any]:
    """lm-eval's process_results for multiple_choice: ``results`` are (loglikelihood, is_greedy) per request
    (the choices, then each unconditional block, plans/vocab/scoring.py); ``n_tokens`` each request's continuation
    token count (acc_per_token). Each listed metric's ``Metric.choices`` computes its value, in the
    registry's order."""
    names = tm.names()
    lls, is_greedy = zip(*results, strict=True)
    k = len(choices)
    blocks = unconditional_metrics(names)
    uncond: dict[str, Sequence[float]] = {}
    if blocks:
        if len(lls) != k * (1 + len(blocks)):
            raise ScoreError(
                f"{', '.join(blocks)} needs {k * (1 + len(blocks))} loglikelihood requests for {k} choices "
                f"(the unconditional ones in the plan), got {len(lls)}"
            )
        uncond = {m: lls[j * k : (j + 1) * k] for j, m in enumerate(blocks, start=1)}
        lls, is_greedy = lls[:k], is_greedy[:k]
    gold, _ = mc_gold(target, choices)
    doc = ChoiceDoc(tuple(lls), tuple(is_greedy), choices, gold, multiple_target, uncond, list(n_tokens or []))
    return {m.name: m.choices(doc) for m in metrics_for("multiple_choice") if m.name in names and m.choices}


def loglikelihood_doc(tm: TaskMetrics, results: Sequence[Any]) -> dict[str, Any]:
    ll, is_greedy = results[0]
    names = tm.names()
    return {
        m.name: m.loglikelihood(ll, is_greedy)
        for m in metrics_for("loglikelihood")
        if m.name in names and m.loglikelihood
    }


def rolling_doc(tm: TaskMetrics, target: Any, results: Sequence[Any]) -> dict[str, Any]:
    (ll,) = results
    if isinstance(ll, (tuple, list)):
        ll = ll[0]
    names = tm.names()
    return {
        m.name: m.rolling(ll, target) for m in metrics_for("loglikelihood_rolling") if m.name in names and m.rolling
    }
