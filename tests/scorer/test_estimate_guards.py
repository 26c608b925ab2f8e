"""Guards of two one-line bugs of #36/#37 (#53 acceptance 4): ``plan-power`` derives the per-document sd from
the baseline's own document count (not the plan's), and a stratified estimate weights only the strata that
have scored documents (a partial run's estimate is not pulled towards 0 by strata with none)."""

from __future__ import annotations

import math

from lmeval.scorer import plan_power
from lmeval.scorer.statistics.power import MDE_FACTOR
from lmeval.scorer.statistics.subsample import stratified


def test_plan_power_takes_the_sd_from_the_baselines_document_count() -> None:
    baseline = {"t": {"acc,none": 0.5, "acc_stderr,none": 0.05, "sample_len": 100}}
    (row,) = plan_power({"t": 400}, baseline, None)
    sd = 0.05 * math.sqrt(100)  # lm-eval's stderr is sd / sqrt(n) of the baseline's 100 documents
    assert row.n == 400 and math.isclose(row.sd, sd)
    assert math.isclose(row.mde_unpaired, MDE_FACTOR * math.sqrt(2 * sd * sd / 400))


def test_strata_without_a_scored_document_carry_no_weight() -> None:
    # 4 documents scored, from strata a and b (10 documents each); stratum c (80 documents) has none yet
    e = stratified([1.0, 1.0, 0.0, 0.0], ["a", "a", "b", "b"], {"a": 10, "b": 10, "c": 80})
    assert math.isclose(e.estimate, 0.5)
    whole = stratified([1.0, 1.0, 0.0, 0.0], ["a", "a", "b", "b"], {"a": 10, "b": 10})
    assert (e.estimate, e.stderr) == (whole.estimate, whole.stderr)
