"""The metrics of the log-likelihood output types (multiple_choice, loglikelihood, loglikelihood_rolling).

They are computed together from one document's log-likelihoods by that output type's scoring
(``scorer.doc_metrics``, with its numpy fast path in ``scorer.taskscore``); here they are registered with the
contract's aggregation and direction."""

from __future__ import annotations

from lmeval.scorer.metrics.registry import Metric, builtin

_NAMES = (
    "acc", "acc_norm", "acc_mutual_info", "acc_bytes", "perplexity", "likelihood", "word_perplexity",
    "byte_perplexity", "bits_per_byte", "mcc", "f1", "brier_score", "acc_per_token", "acc_pmi",
)  # fmt: skip
LOGLIKELIHOOD: tuple[Metric, ...] = tuple(builtin(n) for n in _NAMES)
