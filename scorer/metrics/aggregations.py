"""Aggregations and their standard errors, as lm-eval 0.4.13 computes them.

- ``mean`` has the closed-form stderr (sample standard deviation / sqrt(n)).
- median, f1, matthews_corrcoef, perplexity, bleu, chrf, chrf++, ter and nanmean use lm-eval's bootstrap:
  ``iters // 1000`` chunks of 1000 resamples (fewer if ``iters < 1000``), chunk ``i`` drawing with
  ``random.Random(i).choices(items, k=n)``; the stderr is the sample standard deviation of the replicates.
  We draw the same indices with numpy (``RandomState([i])`` is the same Mersenne Twister stream as
  ``random.Random(i)``, and ``floor(random() * n)`` is what ``choices`` computes), and evaluate the
  statistic for many replicates at once; bleu/chrf/ter call sacrebleu per replicate (lm-eval caps those
  at 100 iterations).
- everything else has no stderr (``"N/A"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lmeval.plans import (
    AGGREGATIONS,
    RegistrationError,
    add_aggregation_name,
    aggregation_names,
    check_name,
    remove_aggregation_name,
)
from lmeval.scorer.metrics.plugin import guarded_call
from lmeval.scorer.metrics.registry import METRICS

BOOTSTRAP_ITERS = 100000


_NUMPY_FROM = 10_000  # longer inputs: numpy sums (pairwise; differ from Python's left-to-right by ~1e-16)


def py_mean(arr: Sequence[float]) -> float:
    if len(arr) >= _NUMPY_FROM:
        return float(np.sum(np.asarray(arr, dtype=np.float64)) / len(arr))
    return sum(arr) / len(arr)


def sample_stddev(arr: Sequence[float]) -> float:
    mu = py_mean(arr)
    if len(arr) >= _NUMPY_FROM:
        x = np.asarray(arr, dtype=np.float64)
        return math.sqrt(float(np.sum((x - mu) ** 2)) / (len(arr) - 1))
    return math.sqrt(sum((x - mu) ** 2 for x in arr) / (len(arr) - 1))


def mean_stderr(arr: Sequence[float]) -> float:
    return sample_stddev(arr) / math.sqrt(len(arr))


def _weighted_mean(items: Sequence[Any]) -> float:
    a, b = zip(*items, strict=True)
    return float(sum(a) / sum(b))


def _sacreformat(refs: Sequence[Any], preds: Sequence[Any]) -> tuple[list[Any], list[str]]:
    refs = list(refs)
    if isinstance(refs[0], str) or not hasattr(refs[0], "__iter__"):
        refs = [[r] for r in refs]
    refs_t = list(zip(*refs, strict=True))
    preds = list(preds)
    if not isinstance(preds[0], str) and hasattr(preds[0], "__iter__"):
        preds = [p[0] for p in preds]
    return [list(r) for r in refs_t], preds


def _corpus(score: str, **options: Any) -> Callable[[Sequence[Any]], float]:
    """A sacrebleu corpus score (``sacrebleu.SCORE``) over (reference, prediction) items, as lm-eval's."""

    def agg(items: Sequence[Any]) -> float:
        import sacrebleu

        refs, preds = _sacreformat([i[0] for i in items], [i[1] for i in items])
        return float(getattr(sacrebleu, score)(preds, refs, **options).score)

    return agg


def _confusion(items: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    gold = np.asarray([i[0] for i in items])
    pred = np.asarray([i[1] for i in items])
    labels, codes = np.unique(np.concatenate([gold, pred]), return_inverse=True)
    cm = np.zeros((1, len(labels), len(labels)), dtype=np.int64)
    np.add.at(cm, (np.zeros(len(items), dtype=np.int64), codes[: len(items)], codes[len(items) :]), 1)
    return cm, labels


def _f1(items: Sequence[Any]) -> float:
    """sklearn's ``f1_score(golds, preds)`` (binary, pos_label=1), as lm-eval's f1 aggregation calls it."""
    cm, labels = _confusion(items)
    return _f1_from_cm(cm, labels)[0]


def _mcc(items: Sequence[Any]) -> float:
    """sklearn's ``matthews_corrcoef(golds, preds)``."""
    cm, _ = _confusion(items)
    return _mcc_from_cm(cm)[0]


def _brier(items: Sequence[Any]) -> float:
    gold = [i[0] for i in items]
    preds = np.array([i[1] for i in items])
    _, k = preds.shape
    return float(np.mean(np.sum((preds - np.eye(k)[gold]) ** 2, axis=1)))


def _nanmean(arr: Sequence[float]) -> float:
    if len(arr) == 0 or all(np.isnan(arr)):
        return float("nan")
    return float(np.nanmean(arr))


def aggregate(name: str, items: Sequence[Any]) -> Any:
    """lm-eval's aggregation ``name`` over per-document items (KeyError: no such aggregation)."""
    return AGGREGATION_REGISTRY[name].fn(items)


def stderr(agg: str | Callable[..., Any], metric: str, items: Sequence[Any], iters: int = BOOTSTRAP_ITERS) -> Any:
    """lm-eval's stderr of aggregation ``agg`` of ``metric`` over ``items`` ("N/A" where it has none)."""
    return stderr_interval(agg, metric, items, iters)[0]


def stderr_interval(
    agg: str | Callable[..., Any], metric: str, items: Sequence[Any], iters: int = BOOTSTRAP_ITERS
) -> tuple[Any, tuple[float, float] | None]:
    """lm-eval's stderr and, for a bootstrapped aggregation, the 95% percentile interval of the same
    replicates (None otherwise, and where the replicates have fewer than two finite values)."""
    if iters <= 0 or len(items) <= 1 or not isinstance(agg, str):
        return "N/A", None
    a = AGGREGATION_REGISTRY.get(agg)
    if a is None:
        return "N/A", None
    if a.stderr is not None:
        return a.stderr(items), None
    if a.bootstrap:
        m = METRICS.get(metric)
        cap = m.bootstrap_cap if m is not None else None
        reps = bootstrap_replicates(agg, items, iters if cap is None else min(iters, cap))
        return sample_stddev(reps), percentile_interval(reps)
    return "N/A", None


def percentile_interval(reps: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """The central ``level`` percentile interval of bootstrap replicates (numpy's linear interpolation)."""
    x = np.asarray(reps, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return None
    lo, hi = np.quantile(x, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _resample_blocks(n: int, iters: int, max_cells: int = 4_000_000) -> Any:
    """Yield index arrays (replicates x n) in lm-eval's order: chunk i is seeded with i."""
    chunk = min(1000, iters)
    per_block = max(1, min(chunk, max_cells // max(n, 1)))
    for i in range(iters // chunk):
        rs = np.random.RandomState([i])
        done = 0
        while done < chunk:
            b = min(per_block, chunk - done)
            r = rs.random_sample(b * n).reshape(b, n)
            yield np.floor(r * float(n)).astype(np.int64)
            done += b


def bootstrap_replicates(agg: str, items: Sequence[Any], iters: int) -> list[float]:
    """The aggregation's value on each of lm-eval's ``iters`` bootstrap resamples of ``items``."""
    a = AGGREGATION_REGISTRY[agg]
    if a.replicates is not None:
        return a.replicates(items, iters)
    seq = list(items)
    return [a.fn([seq[j] for j in row]) for idx in _resample_blocks(len(seq), iters) for row in idx]


def _numeric_replicates(stat: Callable[[np.ndarray], list[float]]) -> Replicates:
    def reps(items: Sequence[Any], iters: int) -> list[float]:
        x = np.asarray(items, dtype=np.float64)
        out: list[float] = []
        for idx in _resample_blocks(len(items), iters):
            out.extend(stat(x[idx]))
        return out

    return reps


def _median_rows(s: np.ndarray) -> list[float]:
    out: list[float] = np.sort(s, axis=1)[:, s.shape[1] // 2].tolist()
    return out


def _perplexity_rows(s: np.ndarray) -> list[float]:
    # lm-eval: exp(-(sum in order)/n); cumulative sum keeps Python's left-to-right order
    sums = np.cumsum(s, axis=1)[:, -1]
    out: list[float] = np.exp(-(sums / s.shape[1])).tolist()
    return out


def _nanmean_rows(s: np.ndarray) -> list[float]:
    return [_nanmean(row.tolist()) for row in s]


def _confusion_replicates(from_cm: Callable[[np.ndarray, np.ndarray], list[float]]) -> Replicates:
    def reps(items: Sequence[Any], iters: int) -> list[float]:
        n = len(items)
        gold = np.asarray([i[0] for i in items])
        pred = np.asarray([i[1] for i in items])
        labels, codes = np.unique(np.concatenate([gold, pred]), return_inverse=True)
        g, p = codes[:n], codes[n:]
        k = len(labels)
        out: list[float] = []
        for idx in _resample_blocks(n, iters):
            cm = np.zeros((idx.shape[0], k, k), dtype=np.int64)
            rows = np.repeat(np.arange(idx.shape[0]), n)
            np.add.at(cm, (rows, g[idx].ravel(), p[idx].ravel()), 1)
            out.extend(from_cm(cm, labels))
        return out

    return reps


def _f1_from_cm(cm: np.ndarray, labels: np.ndarray) -> list[float]:
    # sklearn's binary f1 for pos_label=1 (the only case lm-eval's f1 aggregation accepts)
    if len(labels) > 2 or not set(labels.tolist()) <= {0, 1}:
        raise ValueError(f"f1 needs binary 0/1 labels (as sklearn's binary f1_score), got {labels.tolist()}")
    pos = np.nonzero(labels == 1)[0]
    if len(pos) == 0:  # no positive label anywhere: sklearn's zero_division gives 0.0
        return [0.0] * cm.shape[0]
    j = int(pos[0])
    tp = cm[:, j, j].astype(np.float64)
    fp = cm[:, :, j].sum(axis=1) - tp
    fn = cm[:, j, :].sum(axis=1) - tp
    den = 2 * tp + fp + fn
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(den > 0, 2 * tp / np.where(den > 0, den, 1), 0.0)
    return [float(v) for v in f]


def _mcc_from_cm(cm: np.ndarray) -> list[float]:
    out = []
    for c in cm:
        t_sum = c.sum(axis=1, dtype=np.float64)
        p_sum = c.sum(axis=0, dtype=np.float64)
        n_correct = np.trace(c, dtype=np.float64)
        n_samples = p_sum.sum()
        cov_ytyp = n_correct * n_samples - np.dot(t_sum, p_sum)
        cov_ypyp = n_samples**2 - np.dot(p_sum, p_sum)
        cov_ytyt = n_samples**2 - np.dot(t_sum, t_sum)
        if cov_ypyp * cov_ytyt == 0:
            out.append(0.0)
        else:
            out.append(float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp)))
    return out


def pooled_sample_stderr(stderrs: Sequence[float], sizes: Sequence[int]) -> float:
    pooled = sum((n - 1) * se**2 * n for n, se in zip(sizes, stderrs, strict=True)) / (sum(sizes) - len(sizes))
    return float(np.sqrt(pooled / sum(sizes)))


def unweighted_mean_stderr(stderrs: Sequence[float]) -> float:
    return float(np.sqrt(sum(se**2 for se in stderrs)) / len(stderrs))


def weighted_mean(values: Sequence[float], sizes: Sequence[int], weight_by_size: bool = True) -> float:
    w = list(sizes) if weight_by_size else [1] * len(sizes)
    return float(sum(v * s for v, s in zip(values, w, strict=True)) / sum(w))


# an aggregation's bootstrap replicates computed at once: (items, iterations) -> one value per resample
Replicates = Callable[[Sequence[Any], int], list[float]]


@dataclass(frozen=True)
class Aggregation:
    """One aggregation: ``fn`` over per-document items, and its stderr rule: ``stderr`` a closed form
    (mean's), or ``bootstrap`` lm-eval's bootstrap (``replicates`` computes the resamples' values at once;
    without it ``fn`` runs on each resample), or neither ("N/A")."""

    name: str
    fn: Callable[[Sequence[Any]], Any]
    stderr: Callable[[Sequence[Any]], float] | None = None
    bootstrap: bool = False
    replicates: Replicates | None = None


AGGREGATION_REGISTRY: dict[str, Aggregation] = {}


def register_aggregation(aggregation: Aggregation) -> Aggregation:
    """Add ``aggregation`` to ``AGGREGATION_REGISTRY``; refused (``RegistrationError``, a ValueError): a name
    already registered, or one a task's metric_list cannot name (``plans.check_name``). One that is not
    lm-eval's (a plugin's) runs guarded: an exception of its code is one ``ScoreError`` line naming it."""
    if aggregation.name in AGGREGATION_REGISTRY:
        raise RegistrationError(f"aggregation {aggregation.name!r} is registered twice")
    check_name("aggregation", aggregation.name, result_key=False)
    if aggregation.name not in AGGREGATIONS:
        label = f"aggregation {aggregation.name!r}"
        aggregation = replace(
            aggregation,
            fn=guarded_call(label, "fn", aggregation.fn),
            stderr=None if aggregation.stderr is None else guarded_call(label, "stderr", aggregation.stderr),
            replicates=None
            if aggregation.replicates is None
            else guarded_call(label, "replicates", aggregation.replicates),
        )
    AGGREGATION_REGISTRY[aggregation.name] = aggregation
    if aggregation.name not in aggregation_names():  # a new name: the compile checks accept it from now on
        add_aggregation_name(aggregation.name)
    return aggregation


def unregister_aggregation(name: str) -> None:
    """Remove an aggregation ``register_aggregation`` added from outside the built-ins (a test, a plugin), from
    the registry and the compile checks; lm-eval's own are refused (ValueError)."""
    if name in AGGREGATIONS:
        raise ValueError(f"aggregation {name!r} is lm-eval's own")
    AGGREGATION_REGISTRY.pop(name, None)
    remove_aggregation_name(name)


# the built-ins: lm-eval 0.4.13's aggregations (plans.scoring.AGGREGATIONS, which the compiler checks)
_BUILTINS = (
    Aggregation("mean", py_mean, stderr=mean_stderr),
    Aggregation("median", lambda items: sorted(items)[len(items) // 2], bootstrap=True,
                replicates=_numeric_replicates(_median_rows)),
    Aggregation("nanmean", _nanmean, bootstrap=True, replicates=_numeric_replicates(_nanmean_rows)),
    Aggregation("perplexity", lambda items: math.exp(-py_mean(items)), bootstrap=True,
                replicates=_numeric_replicates(_perplexity_rows)),
    Aggregation("weighted_perplexity", lambda items: math.exp(-_weighted_mean(items))),
    Aggregation("bits_per_byte", lambda items: -_weighted_mean(items) / math.log(2)),
    Aggregation("f1", _f1, bootstrap=True, replicates=_confusion_replicates(_f1_from_cm)),
    Aggregation("matthews_corrcoef", _mcc, bootstrap=True,
                replicates=_confusion_replicates(lambda cm, labels: _mcc_from_cm(cm))),
    Aggregation("bleu", _corpus("corpus_bleu"), bootstrap=True),
    Aggregation("chrf", _corpus("corpus_chrf"), bootstrap=True),
    Aggregation("chrf++", _corpus("corpus_chrf", word_order=2), bootstrap=True),
    Aggregation("ter", _corpus("corpus_ter"), bootstrap=True),
    Aggregation("brier_score", _brier),
    Aggregation("bypass", lambda items: 999),
)  # fmt: skip
for _a in _BUILTINS:
    register_aggregation(_a)
