"""Parity with lm-eval 0.4.13 on the same model outputs (goldens from make_golden.py).

For every task of a golden (arc_challenge, gsm8k strict-match and flexible-extract, asdiv, winogrande, all
57 mmlu subjects and the mmlu groups; and the ``metrics`` golden's tasks for every other metric and filter
the docs' Scoring page lists), the golden's raw responses become a results directory for a plan
with the same documents and requests; our scorer must reproduce every per-sample metric, every filtered
response and every aggregate (value and stderr) to 1e-9, group aggregates included.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.scorer.score import score_run
from tests.bounds import ARITHMETIC, SCORES
from tests.kernelpath.sitecustomize import AVX2_ENV
from tests.scorer.golden_io import aggregate_diffs, build, load_golden, sample_diffs


@pytest.fixture(scope="module", params=["fake", "tiny", "metrics"])
def scored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path]:
    golden = load_golden(request.param)
    _, rdir = build(golden, tmp_path_factory.mktemp(request.param))
    out = score_run(str(rdir), bootstrap_iters=golden.get("bootstrap_iters", 100000))
    assert not out.partial
    return golden, out.results, rdir


def test_aggregates_equal(scored: tuple[dict, dict, Path]) -> None:
    golden, ours, _ = scored
    diffs = aggregate_diffs(golden["lm_eval_results"], ours)
    assert not diffs, diffs[:10]


def test_intervals_beside_lm_evals_stderr(scored: tuple[dict, dict, Path]) -> None:
    """results.json's ``intervals`` (#40) on the goldens: a task's clustered stderr of a mean (each document
    its own cluster) is lm-eval's own stderr; a group's is the sandwich over its subjects, written out here;
    a bootstrapped aggregation's interval is the percentile interval of lm-eval's replicates (about ±1.96 of
    its stderr)."""
    golden, ours, rdir = scored
    iv, ref = ours["intervals"], golden["lm_eval_results"]["results"]
    samples = pl.read_parquet(rdir / "samples.parquet")
    checked = {"document": 0, "subtask": 0, "bootstrap": 0}
    for task, metrics in iv["metrics"].items():
        for key, e in metrics.items():
            metric, _, filt = key.partition(",")
            value, se = ours["results"][task][key], ref.get(task, {}).get(f"{metric}_stderr,{filt}")
            if e["method"] == "bootstrap":
                assert e["stderr_clustered"] is None and e["clusters"] is None and e["low"] <= e["high"]
                if se == 0:  # every replicate the same: so is the interval
                    assert e["low"] == e["high"]
                elif metric.endswith("perplexity"):  # exp of a mean: skewed, the percentiles are not ±1.96 se
                    assert 0 < e["low"] < e["high"]
                else:
                    assert 0.5 < (e["high"] - e["low"]) / (2 * 1.959964 * se) < 2, (task, key, e, se)
                checked["bootstrap"] += 1
            elif iv["cluster"][task] == "document":
                assert e["stderr_clustered"] == pytest.approx(se, rel=SCORES.rtol, abs=ARITHMETIC.atol), (task, key)
                assert e["low"] == pytest.approx(value - 1.959963984540054 * se, rel=SCORES.rtol, abs=ARITHMETIC.atol)
                checked["document"] += 1
            elif iv["cluster"][task] == "subtask" and task == "mmlu":
                leaves = [t for t in ours["results"] if t.startswith("mmlu_") and t in ours["configs"]]
                rows = samples.filter(pl.col("task").is_in(leaves) & (pl.col("filter") == filt))
                m = rows[metric].mean()
                per = rows.group_by("task").agg(s=(pl.col(metric) - m).sum())["s"].to_list()
                g, n = len(per), rows.height
                want = math.sqrt(g / (g - 1) * sum(x * x for x in per) / n**2)
                assert g == 57 and e["clusters"] == 57 and e["stderr_clustered"] == pytest.approx(want, rel=SCORES.rtol)
                checked["subtask"] += 1
    assert checked["document"] > 0, checked
    assert checked["subtask"] > 0 or "mmlu" not in iv["metrics"]
    assert checked["bootstrap"] > 0 or not any(
        e["method"] == "bootstrap" for m in iv["metrics"].values() for e in m.values()
    )


def test_samples_equal(scored: tuple[dict, dict, Path]) -> None:
    golden, _, rdir = scored
    diffs, checked = sample_diffs(golden, pl.read_parquet(rdir / "samples.parquet"))
    assert not diffs, diffs[:10]
    assert checked >= 100


def test_filters_exercised() -> None:
    """The fake golden really covers the regex branches (matches, fallbacks, non-ASCII, trailing newlines)."""
    g = load_golden("fake")
    out: dict[str, list[str]] = {s["filter"]: [] for s in g["tasks"]["gsm8k"]["samples"]}
    for s in g["tasks"]["gsm8k"]["samples"]:
        out[s["filter"]].append(s["filtered_resps"][0])
    assert "[invalid]" in out["strict-match"] and any(x.startswith("-") for x in out["flexible-extract"])
    assert any(x.startswith("$") for x in out["flexible-extract"])
    resps = [i["resps"][0] for i in g["tasks"]["gsm8k"]["instances"]]
    assert any(not r.isascii() for r in resps) and any(r.endswith("\n") for r in resps)
    em = [s["exact_match"] for s in g["tasks"]["gsm8k"]["samples"]]
    assert 0.0 in em and 1.0 in em


SCORING_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "scoring.md"
# lmeval's own JSONL spec tasks: lm-eval has no counterpart to make a golden with (tests/scorer/test_spec_*.py)
NOT_LM_EVAL = {"jsonl_spec", "tool_call"}  # tool_call: BFCL's rules (tests/scorer/test_toolmatch.py)


def documented_metrics_and_filters() -> tuple[set[str], set[str]]:
    """The filter and metric names the docs' Scoring page lists ("(filters: ...; metrics: ...)")."""
    text = " ".join(SCORING_PAGE.read_text().split())
    m = re.search(r"\(filters: ([^;]+); metrics: (.+?)\), with lm-eval", text)
    assert m, "docs/reference/scoring.md no longer lists its filters and metrics"

    def names(part: str) -> set[str]:
        out = set()
        for item in part.split(","):
            item = item.strip().strip("`").replace(" and its options", "")
            if item == "word/byte perplexity":
                out |= {"word_perplexity", "byte_perplexity"}
            else:
                out.add({"pass@k": "pass_at_k"}.get(item, item))
        return out

    return names(m.group(1)), names(m.group(2))


def test_goldens_cover_the_documented_metrics_and_filters() -> None:
    """Every metric and filter docs/reference/scoring.md lists has lm-eval-made per-sample values and aggregates
    in a golden (pass_at_k as humaneval's ``!function utils.pass_at_k``, process_results as a task's own hook)."""
    metrics: set[str] = set()
    filters: set[str] = set()
    for name in ("fake", "tiny", "metrics", "hooks"):
        g = load_golden(name)
        for t in g["tasks"].values():
            for m in t["metric_list"]:
                metrics.add(m["metric"] if isinstance(m["metric"], str) else m["metric"]["__function__"])
            if t.get("process_results"):
                metrics.add("process_results")
            filters |= {f["function"] for fl in t["filter_list"] for f in fl["filter"]}
            assert t["samples"], t
        for res in g["lm_eval_results"]["results"].values():
            assert all(not isinstance(v, float) or not math.isnan(v) for v in res.values()), res
    want_filters, want_metrics = documented_metrics_and_filters()
    assert len(want_metrics) >= 19 and len(want_filters) >= 10
    assert want_metrics - NOT_LM_EVAL <= metrics, want_metrics - NOT_LM_EVAL - metrics
    assert want_filters <= filters, want_filters - filters


def test_metrics_golden_exercises_its_filters() -> None:
    """The filters of the metrics golden change something: repeats differ, majority votes are not all the
    first answer, the map hits both a key and the default, multi_choice_regex maps choice text to letters."""
    t = load_golden("metrics")["tasks"]
    gen = t["golden_gen_metrics"]
    assert {len(i["resps"]) for i in gen["instances"]} == {3}
    assert any(len(set(i["resps"])) > 1 for i in gen["instances"])
    by: dict[str, list[Any]] = {}
    for s in gen["samples"]:
        by.setdefault(s["filter"], []).append(
            s["filtered_resps"][0] if isinstance(s["filtered_resps"], list) else s["filtered_resps"]
        )
    assert {"no answer", "some answer"} <= set(by["mapped"])
    assert any(x.isupper() for x in by["upper"]) and all(x == x.lower() for x in by["lower"])
    assert any(r.startswith(" ") for i in gen["instances"] for r in i["resps"])
    assert not any(x.startswith(" ") for x in by["no-leading-space"])
    mc = t["golden_mc_gen"]
    got = {
        s["filtered_resps"][0] if isinstance(s["filtered_resps"], list) else s["filtered_resps"] for s in mc["samples"]
    }
    assert {"(A)", "(B)", "(C)", "(D)"} & got and "[invalid]" in got
    em = [s["exact_match"] for s in mc["samples"]]
    assert 0.0 in em and 1.0 in em


def test_samples_equal_with_numpy_at_avx2(tmp_path: Path) -> None:
    """The goldens hold one machine's numpy bits: on an AVX2-only CPU ``np.exp`` differs in the last bit
    (brier_score's per-choice lists), within the documented 1e-9. Scored here with numpy's AVX-512 dispatch
    off (what tests/kernelpath sets), every per-sample value still matches."""
    code = (
        "import sys, polars as pl\n"
        "from lmeval.scorer.score import score_run\n"
        "from tests.scorer.golden_io import build, load_golden, sample_diffs\n"
        "g = load_golden('metrics')\n"
        "_, rdir = build(g, __import__('pathlib').Path(sys.argv[1]))\n"
        "score_run(str(rdir), bootstrap_iters=g.get('bootstrap_iters', 100000))\n"
        "diffs, n = sample_diffs(g, pl.read_parquet(rdir / 'samples.parquet'))\n"
        "print(n, diffs[:5])\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(SCORING_PAGE.parents[2]),
        "NPY_DISABLE_CPU_FEATURES": AVX2_ENV["NPY_DISABLE_CPU_FEATURES"],
    }
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    n, diffs = r.stdout.strip().split(" ", 1)
    assert int(n) >= 100 and diffs == "[]", r.stdout
