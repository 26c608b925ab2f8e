"""Corpus metrics (bleu, chrf, chrf++, ter) and bypass: per document only the (gold, prediction) pair.

The corpus score is the aggregation's (``scorer.metrics.aggregations``), over every document's pair; bypass keeps no
value (lm-eval's ``bypass`` metric, for tasks scored elsewhere)."""

from __future__ import annotations

from typing import Any

import polars as pl

from lmeval.scorer.metrics.registry import Metric, builtin


def _pair(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    return [gold, result]


def _pairs_vector(preds: pl.Series, golds: pl.Series, kwargs: dict[str, Any], cache: dict[Any, Any] | None) -> Any:
    return [[a, b] for a, b in zip(golds.to_list(), preds.to_list(), strict=True)]


def _bypass(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    return None


CORPUS: tuple[Metric, ...] = tuple(
    builtin(n, generate=_pair, vector=_pairs_vector, pairs=True, bootstrap_cap=100)
    for n in ("bleu", "chrf", "chrf++", "ter")
)
BYPASS = builtin("bypass", generate=_bypass, raw_gold=True)
