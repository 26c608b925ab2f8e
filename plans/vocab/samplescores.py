"""``sample_scores``: every repeat of a generation scored, the vocabulary both stages share.

A ``generate_until`` task with ``repeats: N`` sends each document's prompt N times. lm-eval's filter chains
reduce those N answers to one (``take_first``, ``majority_vote``) before a metric sees them; ``sample_scores``
(a task config key, or ``run.sample_scores`` for every generation task without its own) asks for every
repeat to be scored by the task's metrics and reduced per document:

- ``mean``: the metric's mean over the N repeats (``avg@N``);
- ``majority``: the metric of the most common filtered answer (ties: the first seen; ``maj@N``);
- ``pass@K`` (1 <= K <= N): the unbiased pass@k estimator over the N repeats (the metric must be 0 or 1).

Each reduction is one more per-document metric, keyed ``METRIC_avg@N``, ``METRIC_maj@N``, ``METRIC_pass@K``
(``reduced_key``) under each of the task's filters; lm-eval's own first-sample scores are unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from lmeval.common import quoted

SAMPLE_SCORES_KEY = "sample_scores"  # the task config's key; run.sample_scores
MEAN, MAJORITY = "mean", "majority"
_PASS = re.compile(r"^pass@([1-9][0-9]{0,5})$")  # K of at most 6 digits (repeats are at most 1024)


class SampleScoresError(ValueError):
    """A bad ``sample_scores`` value (the message names the field)."""


def pass_k(reduction: str) -> int | None:
    """K of ``pass@K`` (None for the other reductions)."""
    m = _PASS.match(reduction)
    return int(m.group(1)) if m else None


def parse_sample_scores(raw: Any, field: str) -> list[str] | None:
    """A list of reductions (``mean``, ``majority``, ``pass@K``), without duplicates, in the order given;
    a single one may be written as a string; None or an empty list is none."""
    if raw is None or raw == []:
        return None
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise SampleScoresError(f"field {field}: must be a list of mean, majority, pass@K; got {quoted(raw)}")
    out: list[str] = []
    for x in items:
        if x not in (MEAN, MAJORITY) and pass_k(x) is None:
            raise SampleScoresError(
                f"field {field}: unknown reduction {quoted(x)} (expected mean, majority or pass@K, K < 1000000)"
            )
        if x not in out:
            out.append(x)
    return out


def check_repeats(reductions: list[str], repeats: int, field: str) -> None:
    """Every ``pass@K`` has K <= repeats."""
    for x in reductions:
        k = pass_k(x)
        if k is not None and k > repeats:
            raise SampleScoresError(f"field {field}: {x} needs repeats >= {k}, the task has repeats {repeats}")


def reduced_key(metric: str, reduction: str, repeats: int) -> str:
    """The per-document metric a reduction adds: ``exact_match_avg@4``, ``exact_match_maj@4``,
    ``exact_match_pass@1``."""
    if reduction == MEAN:
        return f"{metric}_avg@{repeats}"
    if reduction == MAJORITY:
        return f"{metric}_maj@{repeats}"
    return f"{metric}_{reduction}"
