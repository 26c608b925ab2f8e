"""``sample_scores``' per-document reductions (scorer/samplescore.py) against their definitions: lm-eval's
``majority_vote`` (``collections.Counter.most_common``), the pass@k formula, and which filter steps each repeat
goes through."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters import Pipeline
from lmeval.scorer.samplescore import _reduce, majority_index, per_sample_steps

REGEX = {"function": "regex", "regex_pattern": r"#### (\-?[0-9\.\,]+)"}


def test_majority_is_counters_with_its_ties() -> None:
    rnd = random.Random(0)
    for _ in range(2000):  # small alphabets: many ties, which go to the answer seen first
        answers = [rnd.choice("abc") for _ in range(rnd.randint(1, 8))]
        vote = Counter(answers).most_common(1)[0][0]
        assert majority_index(answers) == answers.index(vote), answers


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            xs = [1.0] * c + [0.0] * (n - c)
            for k in range(1, n + 1):
                want = 1.0 - math.comb(n - c, k) / math.comb(n, k)
                assert _reduce(f"pass@{k}", xs, ["x"] * n, "t", 0, "m") == pytest.approx(want)
    assert _reduce("mean", [1.0, 0.0, 0.0, 1.0], list("abcd"), "t", 0, "m") == 0.5
    assert _reduce("majority", [0.0, 1.0, 1.0, 0.0], list("abba"), "t", 0, "m") == 0.0  # a and b tie: a first
    with pytest.raises(ScoreError, match="pass@1 needs m to be 0 or 1 per repeat"):
        _reduce("pass@1", [0.5, 1.0], ["a", "b"], "t", 0, "m")


def test_each_repeat_goes_through_the_steps_before_the_reducers() -> None:
    assert per_sample_steps(Pipeline("strict-match", [REGEX, {"function": "take_first"}]), "t").steps == [REGEX]
    self_consistency = [REGEX, {"function": "majority_vote"}, {"function": "take_first"}]
    assert per_sample_steps(Pipeline("maj@64", self_consistency), "t").steps == [REGEX]
    assert per_sample_steps(Pipeline("none", [{"function": "take_first"}]), "t").steps == []
    with pytest.raises(ScoreError, match="filter 'odd': sample_scores needs the reducer"):
        per_sample_steps(Pipeline("odd", [{"function": "take_first"}, REGEX]), "t")


def test_majority_votes_over_the_answers_not_the_scores() -> None:
    """maj@N (#53): the most common filtered answer decides, and its score is the document's: "7" twice (scored
    1) beats "8" and "9" (scored 0 each), though a vote over the scores would give 0 (seen first of a tie)."""
    answers = ["8", "7", "9", "7"]  # "7" the most common answer
    scores = [0.0, 1.0, 0.0, 1.0]  # the scores' most common value is a tie 0/1, 0 seen first
    assert _reduce("majority", scores, answers, "t", 0, "exact_match") == 1.0
    assert _reduce("majority", [0.0, 1.0, 0.0, 1.0, 0.0], ["a", "b", "c", "b", "d"], "t", 0, "m") == 1.0
