"""rouge: Google's rouge_score F-measures (rouge1, rouge2, rougeL, rougeLsum) of one generation, as lm-eval."""

from __future__ import annotations

from typing import Any

from lmeval.scorer.metrics.registry import builtin


def rouge(references: list[Any], predictions: list[Any]) -> dict[str, float]:
    """The bootstrap aggregate's mid F-measure of each rouge type over the (reference, prediction) pairs."""
    from rouge_score import rouge_scorer, scoring

    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=False)
    agg = scoring.BootstrapAggregator()
    for ref, pred in zip(references, predictions, strict=True):
        agg.add_scores(scorer.score(ref, pred))
    res = agg.aggregate()
    return {k: float(res[k].mid.fmeasure) for k in types}


def _generate(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    return rouge([gold], [result])


ROUGE = builtin("rouge", generate=_generate, unit=True, key_prefix="rouge")
