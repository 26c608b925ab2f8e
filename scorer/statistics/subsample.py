"""A ``run.subsample`` plan's score as an estimate of the full run's (plans/vocab/subsample.py, plans/scored/subset.py).

The documents are a stratified simple random sample without replacement; per metric the estimate is the
stratified mean ``sum_h W_h * mean_h`` (``W_h = N_h / N``, the stratum's share of the population), its variance
``sum_h W_h^2 * (1 - n_h / N_h) * s_h^2 / n_h`` (the finite-population correction: a subset of all documents is
exact), and the interval ``estimate +- 1.96 * stderr``. A stratum with one scored document borrows the
sample's pooled variance (it has none of its own).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from lmeval.plans import SUBSAMPLE_KEY as KEY
from lmeval.plans import Drawn, SubsampleError, TaskSummary
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filterscores import FilterScores
from lmeval.scorer.metrics import TaskMetrics

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    estimate: float
    stderr: float
    lo: float
    hi: float

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "stderr": self.stderr, "ci95": [self.lo, self.hi]}


def _var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return math.nan
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def stratified(values: Sequence[float], strata: Sequence[str], sizes: dict[str, int]) -> Estimate:
    """The estimate of the population mean from ``values`` (one per sampled document, ``strata[i]`` its
    stratum) drawn from strata of ``sizes`` documents."""
    groups: dict[str, list[float]] = {}
    for v, s in zip(values, strata, strict=True):
        groups.setdefault(s, []).append(float(v))
    present = {s: sizes[s] for s in groups}
    pop = sum(present.values())  # strata with no scored document drop out (partial results)
    pooled = _var(values)
    est = 0.0
    var = 0.0
    for s, xs in groups.items():
        w = present[s] / pop
        n_h, big = len(xs), present[s]
        est += w * sum(xs) / n_h
        s2 = _var(xs) if n_h > 1 else pooled
        if not math.isnan(s2):
            var += w * w * max(0.0, 1.0 - n_h / big) * s2 / n_h
    se = math.sqrt(var)
    return Estimate(est, se, est - Z95 * se, est + Z95 * se)


def drawn_of(ts: TaskSummary) -> Drawn | None:
    """The plan's record of the task's subset (None: the task is not subsampled)."""
    rec = ts.config.get(KEY)
    if rec is None:
        return None
    try:
        return Drawn.from_dict(rec, f"task {ts.name}")
    except SubsampleError as e:
        raise ScoreError(str(e)) from None


def task_subset(drawn: Drawn, fscores: list[FilterScores], tm: TaskMetrics) -> dict[str, Any]:
    """results.json's ``subsample.tasks.TASK``: the setting, population, documents scored and, per metric
    aggregated by mean, the estimate and its interval."""
    stratum = dict(zip(drawn.doc_ids, drawn.doc_strata, strict=True))
    metrics: dict[str, Any] = {}
    sampled = 0
    for fs in fscores:
        ids = fs.doc_ids.to_list()
        strata = [stratum.get(d, "") for d in ids]
        for key, vals in fs.values.items():
            if not isinstance(vals, pl.Series) or tm.aggregation.get(key, "mean") != "mean" or vals.null_count():
                continue
            if not ids:
                continue
            metrics[f"{key},{fs.filter}"] = stratified(vals.to_list(), strata, drawn.strata_sizes).to_dict()
            sampled = max(sampled, len(ids))
    return {**drawn.setting.to_dict(), "population": drawn.population, "sampled": sampled, "metrics": metrics}


def console_lines(subsets: dict[str, dict[str, Any]], run_config: dict[str, Any]) -> list[str]:
    """What ``lmeval score`` prints under its tables: each subsampled task's estimate and interval; for a plan
    compiled with ``run.limit``, that its score is of the first documents only."""
    out = []
    for task, rec in sorted(subsets.items()):
        how = f"random, seed {rec['seed']}" + (f", strata {rec['strata']}" if rec.get("strata") else "")
        est = "; ".join(f"{k} {m['estimate']:.4f} (95% CI {m['ci95'][0]:.4f}-{m['ci95'][1]:.4f})"
                        for k, m in rec["metrics"].items())  # fmt: skip
        out.append(f"{task}: subsample of {rec['sampled']} of {rec['population']} documents ({how}), "
                   f"estimating the full run: {est}")  # fmt: skip
    limit = run_config.get("limit") if isinstance(run_config, dict) else None
    if limit is not None:
        out.append(f"run.limit={limit}: scores of the first documents of each task only, not a sample of it "
                   f"(run.subsample=N gives an estimate of the full score with its interval)")  # fmt: skip
    return out
