"""The metrics of the log-likelihood output types (multiple_choice, loglikelihood, loglikelihood_rolling).

Each is registered with its per-document function (lm-eval's ``process_results``) and, for multiple_choice,
its form over (documents x choices) arrays (``scorer.metrics.choice_scores``). They register in the order
lm-eval's ``process_results`` builds its dict, which is the order of the columns of samples.parquet."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from lmeval.scorer.metrics.evidence import ChoiceArrays, ChoiceDoc
from lmeval.scorer.metrics.exact_match import (
    check_exact_match_options,
    exact_match_np,
    exact_match_vector,
    generate_exact_match,
)
from lmeval.scorer.metrics.registry import Metric, builtin


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


def _pair(d: ChoiceDoc) -> Any:
    return (d.gold, int(np.argmax(d.lls)))


def _pairs(a: ChoiceArrays) -> list[Any]:
    return [(int(g), int(p)) for g, p in zip(a.gold.tolist(), a.pred.tolist(), strict=True)]


def _exact(d: ChoiceDoc) -> int:
    """The gold continuation is the greedy one (any gold's, with several targets)."""
    if d.multiple_target:
        return int(any(d.is_greedy[i] if i != -100 else 0 for i in d.gold))
    return int(d.is_greedy[d.gold]) if d.gold != -100 else 0


def _exact_vector(a: ChoiceArrays) -> np.ndarray:
    m = a.gold.shape[0]
    safe = np.where(a.gold == -100, 0, a.gold)
    return np.where(a.gold == -100, 0, a.greedy[np.arange(m), safe].astype(np.int64)).astype(np.float64)


def _unconditional(name: str, same_for_several: bool = False) -> dict[str, Any]:
    """A metric scored against its unconditional block (plans.scoring.UNCONDITIONAL_CONTEXTS):
    log P(choice | prompt) - log P(choice | that context)."""

    def one(d: ChoiceDoc) -> float:
        pred = np.argmax([c - u for c, u in zip(d.lls, d.uncond[name], strict=True)])
        if same_for_several:  # lm-eval compares with == even for several targets (never a hit)
            return 1.0 if pred == d.gold else 0.0
        return d.hit(int(pred))

    def many(a: ChoiceArrays) -> np.ndarray:
        return a.hits(np.argmax(a.cond - a.uncond[name], axis=1))

    def compared(ll: float, choice: str, uncond: float | None, n_tokens: int | None) -> float | None:
        return None if uncond is None else ll - uncond

    return {"choices": one, "choices_vector": many, "compared": compared, "unit": True}


def _per_token(d: ChoiceDoc) -> float:
    k = len(d.choices)
    counts = list(d.n_tokens)[:k]
    if len(counts) != k or any(c is None for c in counts):
        from lmeval.scorer.errors import ScoreError

        raise ScoreError("acc_per_token needs each request's continuation token count (n_continuation_tokens)")
    with np.errstate(divide="ignore", invalid="ignore"):
        pred = np.argmax(np.array(d.lls, dtype=np.float64) / np.array(counts, dtype=np.float64))
    return d.hit(int(pred))


def _ratio(ll: float, by: float) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(ll) / np.float64(by))


def _rolling_words(ll: float, target: str) -> Any:
    return (ll, len(re.split(r"\s+", target)))


def _rolling_bytes(ll: float, target: str) -> Any:
    return (ll, len(target.encode("utf-8")))


LOGLIKELIHOOD: tuple[Metric, ...] = (
    builtin("perplexity", loglikelihood=lambda ll, greedy: ll),
    builtin(
        "acc",
        choices=lambda d: d.hit(np.argmax(d.lls)),
        choices_vector=lambda a: a.hits(a.pred),
        loglikelihood=lambda ll, greedy: int(greedy),
        compared=lambda ll, choice, uncond, n_tokens: ll,
        unit=True,
        int_in=("loglikelihood",),
    ),
    builtin("f1", choices=_pair, choices_vector=_pairs, pairs=True, unit=True),
    builtin("mcc", choices=_pair, choices_vector=_pairs, pairs=True, bounds=(-1.0, 1.0)),
    builtin(
        "acc_norm",
        choices=lambda d: d.hit(d.argmax_over([float(len(c)) for c in d.choices])),
        choices_vector=lambda a: a.hits(a.argmax_over(a.char_lengths())),
        compared=lambda ll, choice, uncond, n_tokens: _ratio(ll, len(choice)),
        unit=True,
    ),
    builtin(
        "acc_bytes",
        choices=lambda d: d.hit(d.argmax_over([float(len(c.encode("utf-8"))) for c in d.choices])),
        choices_vector=lambda a: a.hits(a.argmax_over(a.byte_lengths())),
        compared=lambda ll, choice, uncond, n_tokens: _ratio(ll, len(choice.encode("utf-8"))),
        unit=True,
    ),
    builtin(
        "exact_match",
        generate=generate_exact_match,
        vector=exact_match_vector,
        generate_several=lambda golds, result, kwargs: (
            1.0 if exact_match_np(predictions=[result] * len(golds), references=golds, **kwargs) > 0.0 else 0.0
        ),
        check_options=check_exact_match_options,
        choices=_exact,
        choices_vector=_exact_vector,
        unit=True,
        int_in=("multiple_choice",),
    ),
    builtin("brier_score", choices=lambda d: (d.gold, _softmax(np.array(d.lls, dtype=np.float64))), pairs=True),
    builtin("likelihood", choices=lambda d: (d.gold, d.lls), pairs=True),
    builtin("acc_mutual_info", **_unconditional("acc_mutual_info", same_for_several=True)),
    builtin(
        "acc_per_token",
        choices=_per_token,
        choices_vector=lambda a: a.hits(a.argmax_over(a.tokens())),
        compared=lambda ll, choice, uncond, n_tokens: _ratio(ll, n_tokens) if n_tokens else None,
        unit=True,
    ),
    builtin("acc_pmi", **_unconditional("acc_pmi")),
    builtin("word_perplexity", rolling=_rolling_words),
    builtin("byte_perplexity", rolling=_rolling_bytes),
    builtin("bits_per_byte", rolling=_rolling_bytes),
)
