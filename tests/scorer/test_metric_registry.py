"""The metric registry (scorer/metrics/): its built-ins are exactly the contract's vocabulary, a name is
registered once, and a metric registered from outside the scorer (here, this test module) is scored through
the normal score path like a built-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.plans.vocab import scoring
from lmeval.scorer.metrics import METRICS, Metric, register_metric, unregister_metric
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import build, load_golden


def test_the_built_in_metrics_are_the_contracts_vocabulary() -> None:
    assert set(METRICS) >= set(scoring.METRIC_SPECS)
    for name, c in scoring.METRIC_SPECS.items():
        m = METRICS[name]
        assert (m.name, m.aggregation, m.higher_is_better, m.output_types) == (
            name,
            c.aggregation,
            c.higher_is_better,
            c.output_types,
        )
        # a generate_until metric has its per-document function; the log-likelihood ones are computed together
        assert (m.generate is not None) == ("generate_until" in c.output_types), name


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="metric 'exact_match' is registered twice"):
        register_metric(Metric("exact_match", "mean", True, ("generate_until",)))


def _first_char_match(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> float:
    return 1.0 if str(result)[:1] == str(gold)[:1] else 0.0


@pytest.fixture
def first_char_match() -> Iterator[Metric]:
    m = register_metric(Metric("first_char_match", "mean", True, ("generate_until",), _first_char_match))
    yield m
    unregister_metric("first_char_match")  # from the registry and the compile checks
    assert "first_char_match" not in scoring.METRIC_SPECS


def test_a_metric_registered_here_is_scored_like_a_built_in(first_char_match: Metric, tmp_path: Path) -> None:
    golden = load_golden("metrics")
    task = "golden_mc_gen"
    patch = {task: {"metric_list": [{"metric": "first_char_match"}], "filter_list": []}}
    _, rdir = build(golden, tmp_path, tasks=[task], patch=patch)
    out = score_run(str(rdir), bootstrap_iters=0)
    # by hand, from lm-eval's raw responses: take_first (the default filter) keeps each document's response
    t = golden["tasks"][task]
    resp = {i["doc_id"]: i["resps"][0] for i in t["instances"] if i["idx"] == 0}
    hits = [resp[d["doc_id"]][:1] == str(d["target"])[:1] for d in t["docs"]]
    assert 0 < sum(hits) < len(hits)  # the data tells matches from misses
    assert out.results["results"][task]["first_char_match,none"] == sum(hits) / len(hits)
    assert out.results["higher_is_better"][task]["first_char_match"] is True
    samples = pl.read_parquet(rdir / "samples.parquet").filter(pl.col("task") == task).sort("doc_id")
    assert samples["first_char_match"].to_list() == [float(h) for h in hits]
