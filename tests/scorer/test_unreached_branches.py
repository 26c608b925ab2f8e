"""Scoring branches no golden reaches (#26): a group with ``weight_by_size: false``, and acc_norm / acc_bytes on
choices whose character and byte lengths differ so that the normalisation flips the choice. Runs the real
scorer (``score_run``) on a plan and results written from hand-made documents and log-likelihoods
(``golden_io.build``); the expected values are worked out by hand below, or by lm-eval's own functions."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from lm_eval.api.metrics import aggregate_subtask_metrics, pooled_sample_stderr, unweighted_mean_stderr

from lmeval.scorer.score import score_run
from tests.bounds import ARITHMETIC
from tests.scorer.golden_io import build

MC_METRICS = [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in ("acc", "acc_norm", "acc_bytes")]


def _task(docs: list[tuple[list[str], Any, list[float]]], metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """A multiple_choice task from (choices, target, log-likelihood per choice) documents."""
    out_docs, inst = [], []
    for i, (choices, target, lls) in enumerate(docs):
        out_docs.append({"doc_id": i, "doc": {"i": i}, "target": target, "choices": choices})
        for j, (c, ll) in enumerate(zip(choices, lls, strict=True)):
            inst.append({"context": f"Q{i}:", "continuation": " " + c, "doc_id": i, "idx": j,
                         "request_type": "loglikelihood", "resps": [[ll, j == 0]]})  # fmt: skip
    return {"docs": out_docs, "instances": inst, "output_type": "multiple_choice", "num_fewshot": 0,
            "version": 1, "metric_list": metrics, "filter_list": [], "samples": []}  # fmt: skip


def _score(tmp_path: Path, tasks: dict[str, Any], groups: list[dict[str, Any]]) -> tuple[dict[str, Any], pl.DataFrame]:
    golden = {"source": "hand", "tasks": tasks, "groups": groups}
    _, rdir = build(golden, tmp_path)
    out = score_run(str(rdir), bootstrap_iters=100)
    assert not out.partial
    return out.results, pl.read_parquet(rdir / "samples.parquet")


# --- weight_by_size: false ------------------------------------------------------------------------------


def _right_wrong(n_right: int, n: int) -> list[tuple[list[str], Any, list[float]]]:
    return [(["yes", "no"], 0 if i < n_right else 1, [-1.0, -2.0]) for i in range(n)]  # choice 0 always wins


def test_group_weight_by_size_false_is_the_plain_mean_of_subtasks(tmp_path: Path) -> None:
    tasks = {"big": _task(_right_wrong(9, 10), MC_METRICS[:1]), "small": _task(_right_wrong(1, 4), MC_METRICS[:1])}
    agg = [{"metric": "acc", "aggregation": "mean", "weight_by_size": False}]
    groups = [
        {"name": "g_equal", "subtasks": ["big", "small"], "aggregate_metric_list": agg, "version": 1, "alias": None},
        {"name": "g_sized", "subtasks": ["big", "small"], "version": 1, "alias": None,
         "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": True}]},
    ]  # fmt: skip
    res, _ = _score(tmp_path, tasks, groups)
    r = res["results"]
    assert r["big"]["acc,none"] == 0.9 and r["small"]["acc,none"] == 0.25
    accs, sizes = [0.9, 0.25], [10, 4]
    stderrs = [r["big"]["acc_stderr,none"], r["small"]["acc_stderr,none"]]
    # equal weights: (0.9 + 0.25) / 2 = 0.575; by size: (9 + 1) / 14 = 0.714...
    assert math.isclose(r["g_equal"]["acc,none"], 0.575, rel_tol=ARITHMETIC.rtol)
    assert math.isclose(
        r["g_equal"]["acc,none"], aggregate_subtask_metrics(accs, sizes, False), rel_tol=ARITHMETIC.rtol
    )
    assert math.isclose(r["g_sized"]["acc,none"], 10 / 14, rel_tol=ARITHMETIC.rtol)
    # the stderr follows the weighting (lm-eval's group.py: unweighted_mean_stderr without size weights)
    assert math.isclose(r["g_equal"]["acc_stderr,none"], unweighted_mean_stderr(stderrs), rel_tol=ARITHMETIC.rtol)
    assert math.isclose(r["g_sized"]["acc_stderr,none"], pooled_sample_stderr(stderrs, sizes), rel_tol=ARITHMETIC.rtol)
    assert r["g_equal"]["acc_stderr,none"] != r["g_sized"]["acc_stderr,none"]


def test_group_clustered_stderr_follows_the_weighting(tmp_path: Path) -> None:
    """#40: a group's clusters are its subtasks; by size, every document weighs 1 (the sandwich over the
    pooled documents); with equal weights each document 1/n of its task, so the clustered variance is that of
    the subtask means: k/(k-1) · Σ_t (m_t - m)² / k²."""
    tasks = {"big": _task(_right_wrong(9, 10), MC_METRICS[:1]), "small": _task(_right_wrong(1, 4), MC_METRICS[:1])}
    groups = [
        {"name": f"g_{w}", "subtasks": ["big", "small"], "version": 1, "alias": None,
         "aggregate_metric_list": [{"metric": "acc", "aggregation": "mean", "weight_by_size": w == "sized"}]}
        for w in ("equal", "sized")
    ]  # fmt: skip
    res, _ = _score(tmp_path, tasks, groups)
    iv = res["intervals"]["metrics"]
    m = (0.9 + 0.25) / 2
    equal = math.sqrt(2 / 1 * ((0.9 - m) ** 2 + (0.25 - m) ** 2) / 4)
    m = 10 / 14
    sums = [9 - 10 * m, 1 - 4 * m]  # Σ (x_i - m) per subtask
    sized = math.sqrt(2 / 1 * sum(x * x for x in sums) / 14**2)
    assert iv["g_equal"]["acc,none"]["stderr_clustered"] == pytest.approx(equal, rel=ARITHMETIC.rtol)
    assert iv["g_sized"]["acc,none"]["stderr_clustered"] == pytest.approx(sized, rel=ARITHMETIC.rtol)
    assert iv["g_equal"]["acc,none"]["clusters"] == iv["g_sized"]["acc,none"]["clusters"] == 2
    assert res["intervals"]["cluster"] == {"g_equal": "subtask", "g_sized": "subtask", "big": "document",
                                           "small": "document"}  # fmt: skip


# --- acc_norm counts characters, acc_bytes counts UTF-8 bytes -----------------------------------------

# (choices, target, log-likelihoods). Per choice: characters / bytes / ll, then the argmax of each metric.
#   "ééé" 3 chars 6 bytes, "abcd" 4 chars 4 bytes; lls -3.0, -3.5
#       acc: argmax(-3.0, -3.5) = 0; acc_norm: argmax(-1.0, -0.875) = 1; acc_bytes: argmax(-0.5, -0.875) = 0
#   "日本" 2 chars 6 bytes, "abcde" 5 chars 5 bytes; lls -4.0, -7.0
#       acc: 0; acc_norm: argmax(-2.0, -1.4) = 1; acc_bytes: argmax(-0.667, -1.4) = 0
#   "Ωmega" 5 chars 6 bytes, "x" 1 char 1 byte; lls -5.5, -1.05
#       acc: 1; acc_norm: argmax(-1.1, -1.05) = 1; acc_bytes: argmax(-0.917, -1.05) = 0
NORM_DOCS: list[tuple[list[str], Any, list[float]]] = [
    (["ééé", "abcd"], 1, [-3.0, -3.5]),
    (["ééé", "abcd"], 0, [-3.0, -3.5]),
    (["日本", "abcde"], 1, [-4.0, -7.0]),
    (["Ωmega", "x"], 0, [-5.5, -1.05]),
]
# per document: (acc, acc_norm, acc_bytes)
NORM_WANT = [(0.0, 1.0, 0.0), (1.0, 0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]


def _by_hand(choices: list[str], lls: list[float]) -> tuple[int, int, int]:
    chars = [ll / len(c) for c, ll in zip(choices, lls, strict=True)]
    nbytes = [ll / len(c.encode("utf-8")) for c, ll in zip(choices, lls, strict=True)]
    return lls.index(max(lls)), chars.index(max(chars)), nbytes.index(max(nbytes))


def test_the_hand_table_flips_between_characters_and_bytes() -> None:
    for (choices, target, lls), want in zip(NORM_DOCS, NORM_WANT, strict=True):
        assert tuple(float(p == target) for p in _by_hand(choices, lls)) == want
        assert any(len(c) != len(c.encode("utf-8")) for c in choices)
    assert {w[1] for w in NORM_WANT} == {0.0, 1.0} and any(w[1] != w[2] for w in NORM_WANT)


def test_acc_norm_counts_characters_and_acc_bytes_bytes(tmp_path: Path) -> None:
    """Both scoring paths: the vectorised one (acc, acc_norm, acc_bytes only) and lm-eval's per-document
    process_results (brier_score sends the task there)."""
    brier = {"metric": "brier_score", "aggregation": "brier_score", "higher_is_better": False}
    tasks = {"norm_fast": _task(NORM_DOCS, MC_METRICS), "norm_slow": _task(NORM_DOCS, [*MC_METRICS, brier])}
    res, samples = _score(tmp_path, tasks, [])
    for name in tasks:
        rows = samples.filter(pl.col("task") == name).sort("doc_id")
        got = [(r["acc"], r["acc_norm"], r["acc_bytes"]) for r in rows.iter_rows(named=True)]
        assert got == NORM_WANT, (name, got)
        r = res["results"][name]
        for k, key in enumerate(("acc,none", "acc_norm,none", "acc_bytes,none")):
            assert r[key] == sum(w[k] for w in NORM_WANT) / len(NORM_WANT), (name, key, json.dumps(r))
