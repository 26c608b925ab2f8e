"""Clustered standard errors, intervals and power (#40) on real runs: SmolLM2-135M-Instruct and the tiny
model (the hf backend: no engine start for 96 short requests), 0-shot, on three MMLU subjects of four
documents each (``mmlu_clusters``), scored once per module.

- the clustered stderr of the group (clusters: its subjects) and of the mixed task (``metadata.cluster_key:
  subject``) equals the sandwich estimator written out here, and the interval is value ± z·se;
- with every document its own cluster (the subject tasks) it equals lm-eval's stderr;
- ``lmeval compare`` prints McNemar's p equal to scipy's exact binomial test on the flip counts, the paired
  interval and the MDE; ``lmeval plan-power`` the MDE of the formula.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from statistics import NormalDist
from typing import Any

import polars as pl
import pytest

from lmeval.plans.scored.files import read_scored
from tests.bounds import ARITHMETIC, SCORES
from tests.e2e.mmlu_clusters import GROUP, MIXED, SUBJECTS, write_mmlu_clusters
from tests.support import cli_in_process as cli
from tests.support import data_dir

Z95 = NormalDist().inv_cdf(0.975)
Z80 = NormalDist().inv_cdf(0.80)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("statistics")
    names = write_mmlu_clusters(work / "tasks", data_dir())
    out = {}
    for side, model in (("a", "model=smollm2"), ("b", "model=tiny")):
        res, plan = work / f"results-{side}", work / f"plan-{side}.msgpack"
        rc, _, err = cli("run", f"run.include_path={work / 'tasks'}", f"run.tasks=[{','.join(names)}]", model,
                         "model.backend=hf", "--out", str(res), "--plan-out", str(plan), "--no-progress")  # fmt: skip
        assert rc == 0, err
        out[side], out[f"plan-{side}"] = res, plan
    return out


def _results(d: Path) -> dict[str, Any]:
    return dict(json.loads((d / "results.json").read_text()))


def _acc(d: Path, task: str) -> list[float]:
    s = pl.read_parquet(d / "samples.parquet").filter(pl.col("task") == task).sort("doc_id")
    return [float(x) for x in s["acc"].to_list()]


def _sandwich(clusters: list[list[float]]) -> float:
    """Miller's eq. 4 with the G/(G-1) correction: G/(G-1) · Σ_c (Σ_{i in c} (x_i - m))² / n²."""
    xs = [x for c in clusters for x in c]
    n, g = len(xs), len(clusters)
    m = sum(xs) / n
    return math.sqrt(g / (g - 1) * sum(sum(x - m for x in c) ** 2 for c in clusters) / n**2)


@pytest.mark.vllm
def test_clustered_stderr_is_the_sandwich_estimator(runs: dict[str, Path]) -> None:
    res = _results(runs["a"])
    iv = res["intervals"]
    assert iv["version"] == 1 and iv["level"] == 0.95
    assert iv["cluster"] == {GROUP: "subtask", MIXED: "doc.subject", **{f"mm_{s}": "document" for s in SUBJECTS}}
    by_subject = [_acc(runs["a"], f"mm_{s}") for s in SUBJECTS]
    assert 0 < sum(map(sum, by_subject)) < sum(map(len, by_subject))  # a real model: some right, not all
    want = _sandwich(by_subject)
    assert _acc(runs["a"], MIXED) == [x for c in by_subject for x in c]  # the same documents, the same answers
    for name in (GROUP, MIXED):
        e = iv["metrics"][name]["acc,none"]
        value = res["results"][name]["acc,none"]
        assert e["stderr_clustered"] == pytest.approx(want, rel=ARITHMETIC.rtol) and e["clusters"] == len(SUBJECTS)
        assert e["method"] == "normal"
        assert (e["low"], e["high"]) == pytest.approx((value - Z95 * want, value + Z95 * want), rel=ARITHMETIC.rtol)
    # lm-eval's stderr stays as lm-eval computes it (parity), beside the clustered one
    assert res["results"][MIXED]["acc_stderr,none"] != pytest.approx(want, rel=SCORES.rtol)


@pytest.mark.vllm
def test_one_document_per_cluster_is_lm_evals_stderr(runs: dict[str, Path]) -> None:
    res = _results(runs["a"])
    for s in SUBJECTS:
        task = f"mm_{s}"
        xs = _acc(runs["a"], task)
        e = res["intervals"]["metrics"][task]["acc,none"]
        assert e["clusters"] == len(xs)
        assert e["stderr_clustered"] == pytest.approx(_sandwich([[x] for x in xs]), rel=ARITHMETIC.rtol)
        assert e["stderr_clustered"] == pytest.approx(res["results"][task]["acc_stderr,none"], rel=ARITHMETIC.rtol)


@pytest.mark.vllm
def test_table_shows_the_interval(runs: dict[str, Path]) -> None:
    rc, out, err = cli("score", str(runs["a"]))
    assert rc == 0, err
    e = _results(runs["a"])["intervals"]["metrics"][MIXED]["acc,none"]
    assert f"[{e['low']:.4f}, {e['high']:.4f}]" in out and "3 (doc.subject)" in out


@pytest.mark.vllm
def test_compare_prints_mcnemar_and_mde(runs: dict[str, Path]) -> None:
    from scipy.stats import binomtest

    from lmeval.diff.runs import compare

    rc, out, err = cli("compare", str(runs["a"]), str(runs["b"]))
    assert rc == 0, err
    c = {d.task: d for d in compare(str(runs["a"]), str(runs["b"])).deltas}
    flipped = 0
    for task in [MIXED, *(f"mm_{s}" for s in SUBJECTS)]:
        a, b = _acc(runs["a"], task), _acc(runs["b"], task)
        n01 = sum(1 for x, y in zip(a, b, strict=True) if x == 1 and y == 0)
        n10 = sum(1 for x, y in zip(a, b, strict=True) if x == 0 and y == 1)
        flipped += n01 + n10
        d = c[task]
        assert (d.test, d.n01, d.n10) == ("mcnemar", n01, n10)
        assert d.p_test == pytest.approx(
            binomtest(n10, n01 + n10, 0.5).pvalue if n01 + n10 else 1.0, rel=ARITHMETIC.rtol
        )
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        mean = sum(diffs) / len(diffs)
        se = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1) / len(diffs))
        assert d.mde == pytest.approx((Z95 + Z80) * se, rel=ARITHMETIC.rtol)
        assert (d.low, d.high) == pytest.approx(
            (mean - Z95 * se, mean + Z95 * se), rel=ARITHMETIC.rtol, abs=ARITHMETIC.atol
        )
        line = next(x for x in out.splitlines() if re.search(rf"\b{task}\b", x) and "acc" in x)
        assert f"{d.p_test:.3g} McNemar" in line and f"{d.mde:.4f}" in line, line
        assert f"[{d.low:+.4f}, {d.high:+.4f}]" in line, line
    assert flipped > 0  # the two models disagree somewhere: the flips are counted, not all zero


@pytest.mark.vllm
def test_plan_power_is_the_mde_formula(runs: dict[str, Path]) -> None:
    rc, out, err = cli("plan-power", str(runs["plan-b"]), "--baseline", str(runs["a"]), "--correlation", "0.3")
    assert rc == 0, err
    res = _results(runs["a"])
    for task in (MIXED, GROUP):
        m = res["results"][task]
        n = m["sample_len"]
        sd = m["acc_stderr,none"] * math.sqrt(n)
        deff = max(1.0, (res["intervals"]["metrics"][task]["acc,none"]["stderr_clustered"] / m["acc_stderr,none"]) ** 2)
        want = (Z95 + Z80) * math.sqrt(2 * sd * sd * (1 - 0.3) * deff / n)
        line = next(x for x in out.splitlines() if re.search(rf"│ {task}\s+│", x))
        assert f"{want:.4f}" in line and f"{deff:.2f}" in line, line


@pytest.mark.vllm
def test_bad_cluster_key_and_intervals_version(runs: dict[str, Path], tmp_path: Path) -> None:
    from lmeval.scorer.errors import ScoreError
    from lmeval.scorer.intervals import cluster_labels
    from lmeval.scorer.planload import load

    td = load(str(runs["plan-a"])).tasks[MIXED]
    with pytest.raises(ScoreError, match=rf"task {MIXED}: field metadata.cluster_key: doc 0 has no field 'passage'"):
        cluster_labels(MIXED, "passage", td, [0, 1])
    bad = tmp_path / "bad"
    shutil.copytree(runs["a"], bad)
    doc = _results(bad)
    doc["intervals"]["version"] = 2
    (bad / "results.json").write_text(json.dumps(doc))
    rc, _, err = cli("compare", str(runs["a"]), str(bad))
    assert rc == 2 and "field intervals.version: 2; this lmeval reads 1" in err and len(err.strip().splitlines()) == 1
    assert read_scored(runs["a"]).results.intervals is not None
