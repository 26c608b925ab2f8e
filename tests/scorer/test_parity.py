"""Parity with lm-eval 0.4.13 on the same model outputs (goldens from make_golden.py).

For every task of a golden (arc_challenge, gsm8k strict-match and flexible-extract, asdiv, winogrande, all
57 mmlu subjects and the mmlu groups; and the ``metrics`` golden's tasks for every other metric and filter
the README lists), the golden's raw responses become a results directory for a plan
with the same documents and requests; our scorer must reproduce every per-sample metric, every filtered
response and every aggregate (value and stderr) to 1e-9, group aggregates included.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.scorer.score import score_run
from tests.scorer.golden_io import build, load_golden

TOL = 1e-9


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return bool(a == b)
    if math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= TOL * max(1.0, abs(b))


@pytest.fixture(scope="module", params=["fake", "tiny", "metrics"])
def scored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path]:
    golden = load_golden(request.param)
    _, rdir = build(golden, tmp_path_factory.mktemp(request.param))
    out = score_run(str(rdir), console=False, bootstrap_iters=golden.get("bootstrap_iters", 100000))
    assert not out.partial
    return golden, out.results, rdir


def test_aggregates_equal(scored: tuple[dict, dict, Path]) -> None:
    golden, ours, _ = scored
    exp = golden["lm_eval_results"]
    diffs = []
    for name, metrics in exp["results"].items():
        got = ours["results"][name]
        for k, v in metrics.items():
            if isinstance(v, dict):
                ok = got.get(k) == v
            else:
                ok = _close(got.get(k), v)
            if not ok:
                diffs.append((name, k, got.get(k), v))
        extra = set(got) - set(metrics)
        assert not extra, (name, extra)
    assert not diffs, diffs[:10]
    assert set(ours.get("groups", {})) == set(exp.get("groups", {}))
    for key in ("versions", "n-shot", "higher_is_better", "group_subtasks", "n-samples"):
        for name, v in exp[key].items():
            if key == "n-samples":
                assert ours[key][name]["effective"] == v["effective"], (key, name)
            else:
                assert ours[key].get(name) == v, (key, name, ours[key].get(name), v)


def test_samples_equal(scored: tuple[dict, dict, Path]) -> None:
    golden, _, rdir = scored
    samples = pl.read_parquet(rdir / "samples.parquet")
    index = {(r["task"], r["doc_id"], r["filter"]): r for r in samples.iter_rows(named=True)}
    checked = 0
    for tname, t in golden["tasks"].items():
        for smp in t["samples"]:
            row = index[(tname, smp["doc_id"], smp["filter"])]
            items = json.loads(row["items"]) if row.get("items") else {}
            for k, v in smp.items():
                if k in ("doc_id", "filter", "filtered_resps"):
                    continue
                got = row.get(k, items.get(k))
                assert (got == v) if isinstance(v, list) else _close(got, v), (tname, smp["doc_id"], k, got, v)
                checked += 1
            if t["output_type"] == "generate_until":
                fr = smp["filtered_resps"]
                assert row["filtered"] == (fr[0] if isinstance(fr, list) and len(fr) == 1 else fr)
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


README_METRICS = {
    "acc", "acc_norm", "acc_bytes", "acc_mutual_info", "exact_match", "f1", "mcc", "bleu", "chrf", "ter",
    "brier_score", "perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte",
}  # fmt: skip
README_FILTERS = {
    "regex", "take_first", "take_first_k", "majority_vote", "lowercase", "uppercase", "map", "multi_choice_regex",
    "remove_whitespace",
}  # fmt: skip


def test_goldens_cover_the_readme_metrics_and_filters() -> None:
    """Every metric and filter above has lm-eval-made per-sample values and aggregates in some golden (rouge,
    custom and pass@k are not here: see the README)."""
    metrics: set[str] = set()
    filters: set[str] = set()
    for name in ("fake", "tiny", "metrics"):
        g = load_golden(name)
        for t in g["tasks"].values():
            metrics |= {m["metric"] for m in t["metric_list"]}
            filters |= {f["function"] for fl in t["filter_list"] for f in fl["filter"]}
            assert t["samples"], t
        for res in g["lm_eval_results"]["results"].values():
            assert all(not isinstance(v, float) or not math.isnan(v) for v in res.values()), res
    assert README_METRICS <= metrics, README_METRICS - metrics
    assert README_FILTERS <= filters, README_FILTERS - filters


def test_metrics_golden_exercises_its_filters() -> None:
    """The filters of the metrics golden change something: repeats differ, majority votes are not all the
    first answer, the map hits both a key and the default, multi_choice_regex maps choice text to letters."""
    t = load_golden("metrics")["tasks"]
    gen = t["golden_gen_metrics"]
    assert {len(i["resps"]) for i in gen["instances"]} == {3}
    assert any(len(set(i["resps"])) > 1 for i in gen["instances"])
    by = {}
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
