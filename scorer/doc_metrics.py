"""Per-document scoring in Python with lm-eval's ``process_results`` semantics (the reference path).

The vectorised paths beside the metrics (``Metric.vector``, e.g. ``scorer.metrics.exact_match``) must agree
with these functions on every document; they are used for everything the fast paths do not cover (lists of
targets, NaN log-likelihoods, user metrics,
``process_results`` references, exotic filter outputs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from lmeval.plans import unconditional_metrics
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.metrics import METRICS, TaskMetrics, exact_match_np


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
    names = tm.names()
    if choices is not None:
        gold = choices[gold]
    elif multiple_target:
        gold = list(gold)
    elif type(gold) is not type(result) and not ("bypass" in names or isinstance(result, list)):
        gold = type(result)(gold)
    out: dict[str, Any] = {}
    for entry in tm.metrics:
        if multiple_target:
            if not isinstance(gold, list):
                gold = [gold]
            if entry.builtin == "exact_match":
                s = exact_match_np(predictions=[result for _ in range(len(gold))], references=gold, **entry.kwargs)
                score: Any = 1.0 if s > 0.0 else 0.0
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


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


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
    token count (acc_per_token)."""
    names = tm.names()
    lls, is_greedy = zip(*results, strict=True)
    completion_len = np.array([float(len(c)) for c in choices])
    byte_len = np.array([float(len(c.encode("utf-8"))) for c in choices])
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
    with np.errstate(divide="ignore", invalid="ignore"):
        pred = np.argmax(lls)
        pred_norm = np.argmax(lls / completion_len)
        pred_byte = np.argmax(lls / byte_len)
    gold, _ = mc_gold(target, choices)
    if multiple_target:
        acc = 1.0 if pred in gold else 0.0
        acc_norm = 1.0 if pred_norm in gold else 0.0
        acc_bytes = 1.0 if pred_byte in gold else 0.0
        exact = int(any(is_greedy[i] if i != -100 else 0 for i in gold))
    else:
        acc = 1.0 if pred == gold else 0.0
        acc_norm = 1.0 if pred_norm == gold else 0.0
        acc_bytes = 1.0 if pred_byte == gold else 0.0
        exact = int(is_greedy[gold]) if gold != -100 else 0
    out: dict[str, Any] = {}
    if "acc" in names:
        out["acc"] = acc
    if "f1" in names:
        out["f1"] = (gold, int(pred))
    if "mcc" in names:
        out["mcc"] = (gold, int(pred))
    if "acc_norm" in names:
        out["acc_norm"] = acc_norm
    if "acc_bytes" in names:
        out["acc_bytes"] = acc_bytes
    if "exact_match" in names:
        out["exact_match"] = exact
    if "brier_score" in names:
        out["brier_score"] = (gold, _softmax(np.array(lls, dtype=np.float64)))
    if "likelihood" in names:
        out["likelihood"] = (gold, lls)
    for metric in blocks:
        mi = [c - u for c, u in zip(lls, uncond[metric], strict=True)]
        if metric == "acc_mutual_info":  # lm-eval compares with == even for several targets (never a hit)
            out[metric] = 1.0 if np.argmax(mi) == gold else 0.0
        else:
            out[metric] = _hit(int(np.argmax(mi)), gold, multiple_target)
    if "acc_per_token" in names:
        counts = list(n_tokens or [])[:k]
        if len(counts) != k or any(c is None for c in counts):
            raise ScoreError("acc_per_token needs each request's continuation token count (n_continuation_tokens)")
        with np.errstate(divide="ignore", invalid="ignore"):
            pred_tok = int(np.argmax(np.array(lls, dtype=np.float64) / np.array(counts, dtype=np.float64)))
        out["acc_per_token"] = _hit(pred_tok, gold, multiple_target)
    return out


def _hit(pred: int, gold: Any, multiple_target: bool) -> float:
    return 1.0 if (pred in gold if multiple_target else pred == gold) else 0.0


def loglikelihood_doc(tm: TaskMetrics, results: Sequence[Any]) -> dict[str, Any]:
    ll, is_greedy = results[0]
    names = tm.names()
    out: dict[str, Any] = {}
    if "perplexity" in names:
        out["perplexity"] = ll
    if "acc" in names:
        out["acc"] = int(is_greedy)
    return out


def rolling_doc(tm: TaskMetrics, target: Any, results: Sequence[Any]) -> dict[str, Any]:
    (ll,) = results
    if isinstance(ll, (tuple, list)):
        ll = ll[0]
    words = len(re.split(r"\s+", target))
    nbytes = len(target.encode("utf-8"))
    names = tm.names()
    out: dict[str, Any] = {}
    if "word_perplexity" in names:
        out["word_perplexity"] = (ll, words)
    if "byte_perplexity" in names:
        out["byte_perplexity"] = (ll, nbytes)
    if "bits_per_byte" in names:
        out["bits_per_byte"] = (ll, nbytes)
    return out
