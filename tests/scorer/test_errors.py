"""Bad input to ``lmeval score`` / ``lmeval compare``: one-line errors, exit status 2 (via lmeval.cli.main)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.scorer.score import score_run
from tests.bounds import ARITHMETIC, SCORES
from tests.scorer.golden_io import build, load_golden

TASKS = ["gsm8k", "arc_challenge"]


@pytest.fixture(scope="module")
def golden() -> dict:
    return load_golden("fake")


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_results_from_another_plan(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, rdir = build(golden, tmp_path / "a", TASKS)
    other, _ = build(golden, tmp_path / "b", ["gsm8k"])
    assert main(["score", str(rdir), "--plan", str(other)]) == 2
    msg = _err(capsys)
    assert "produced from plan" in msg and str(other) in msg


def test_partial_results_are_scored_and_reported(
    golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    drop = {("gsm8k", 3, 0), ("gsm8k", 7, 0), ("arc_challenge", 5, 2)}
    _, rdir = build(golden, tmp_path / "p", TASKS, drop=drop)
    assert main(["score", str(rdir), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == str(rdir)
    errs = captured.err.strip().splitlines()
    assert errs[-1].startswith("lmeval score: error: partial results: 3 instances missing in 2 task(s)")
    assert any("gsm8k: 2 instances missing (first: doc 3 idx 0" in e for e in errs)
    res = json.loads((rdir / "results.json").read_text())
    assert res["partial"]["arc_challenge"]["first_missing"][0]["doc_id"] == 5
    assert res["n-samples"]["gsm8k"]["effective"] == 38
    # the complete documents are scored exactly as lm-eval scored them
    samples = {
        s["doc_id"]: s["exact_match"] for s in golden["tasks"]["gsm8k"]["samples"] if s["filter"] == "strict-match"
    }
    kept = [v for d, v in sorted(samples.items()) if d not in (3, 7)]
    assert abs(res["results"]["gsm8k"]["exact_match,strict-match"] - sum(kept) / len(kept)) < ARITHMETIC.atol
    assert main(["score", str(rdir), "--quiet", "--allow-partial"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(rdir)


def test_unknown_metric(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, rdir = build(
        golden,
        tmp_path / "m",
        TASKS,
        patch={"arc_challenge": {"metric_list": [{"metric": "acc"}, {"metric": "accuracy_plus"}]}},
    )
    assert main(["score", str(rdir)]) == 2
    msg = _err(capsys)
    assert "task arc_challenge: unknown metric 'accuracy_plus'" in msg


def test_invalid_regex(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fl = [
        {
            "name": "strict-match",
            "filter": [{"function": "regex", "regex_pattern": "#### ((\\d+)"}, {"function": "take_first"}],
        }
    ]
    _, rdir = build(golden, tmp_path / "r", ["gsm8k"], patch={"gsm8k": {"filter_list": fl}})
    assert main(["score", str(rdir)]) == 2
    msg = _err(capsys)
    assert "task gsm8k: filter 'strict-match': invalid regex in regex_pattern" in msg


def test_invalid_regex_to_ignore(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ml = [{"metric": "exact_match", "regexes_to_ignore": ["[unclosed"]}]
    _, rdir = build(golden, tmp_path / "ri", ["gsm8k"], patch={"gsm8k": {"metric_list": ml}})
    assert main(["score", str(rdir)]) == 2
    msg = _err(capsys)
    assert "task gsm8k: metric exact_match: invalid regex in regexes_to_ignore" in msg


def test_unknown_filter_and_untrusted_code(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fl = [{"name": "x", "filter": [{"function": "no_such_filter"}]}]
    _, rdir = build(golden, tmp_path / "f", ["gsm8k"], patch={"gsm8k": {"filter_list": fl}})
    assert main(["score", str(rdir)]) == 2
    assert "unknown filter function 'no_such_filter'" in _err(capsys)
    ref = {"__function__": "utils.process", "file": "utils.py", "sha256": "0" * 64, "files": {"utils.py": "0" * 64}}
    _, rdir2 = build(golden, tmp_path / "c", ["gsm8k"], patch={"gsm8k": {"config": {"process_results": ref}}})
    assert main(["score", str(rdir2)]) == 2
    assert "--trust-code" in _err(capsys)


def test_trusted_code_checked_against_sha256(golden: dict, tmp_path: Path) -> None:
    import hashlib

    src = tmp_path / "utils.py"
    src.write_text("def process(doc, results):\n    return {'nchars': float(len(results[0]))}\n")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    ref = {"__function__": "utils.process", "file": "utils.py", "sha256": digest, "files": {"utils.py": digest}}
    ml = [{"metric": "nchars", "aggregation": "mean", "higher_is_better": True}]
    _, rdir = build(
        golden, tmp_path / "t", ["gsm8k"], patch={"gsm8k": {"config": {"process_results": ref}, "metric_list": ml}}
    )
    res = score_run(str(rdir), trust_code=True, include_path=[tmp_path]).results
    assert res["results"]["gsm8k"]["nchars,strict-match"] > 0
    src.write_text(src.read_text() + "# changed\n")
    with pytest.raises(Exception, match="changed since the plan was compiled"):
        score_run(str(rdir), trust_code=True, include_path=[tmp_path])


def test_not_a_results_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path)]) == 2
    assert "not a results directory" in _err(capsys)
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 2
    assert "not a scored run" in _err(capsys)


def test_samples_parquet_and_compare(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, ra = build(golden, tmp_path / "ca", TASKS)
    assert main(["score", str(ra), "--quiet"]) == 0
    # run B: flip some arc_challenge answers by changing log-likelihoods
    _, rb = build(golden, tmp_path / "cb", TASKS)
    part = next(rb.glob("part-*.parquet"))
    df = pl.read_parquet(part)
    df = df.with_columns(
        loglikelihood=pl.when((pl.col("task") == "arc_challenge") & (pl.col("idx") == 0) & (pl.col("doc_id") < 10))
        .then(pl.lit(0.0))
        .otherwise(pl.col("loglikelihood"))
    )
    df.write_parquet(part)
    assert main(["score", str(rb), "--quiet"]) == 0
    capsys.readouterr()
    from lmeval.diff.runs import compare

    c = compare(str(ra), str(rb))
    acc = next(d for d in c.deltas if d.task == "arc_challenge" and d.metric == "acc")
    # oracle: lm-eval's own per-document acc for run A (the golden), and for run B the same documents with
    # choice 0 forced to the argmax on docs 0-9 (gold read from the plan); paired z-test by hand
    import math
    import statistics

    from lmeval.plans.plan import read_plan

    plan_b = read_plan(tmp_path / "cb" / "plan.msgpack")
    gold = {d.doc_id: d.target for d in plan_b.docs if d.task == "arc_challenge"}
    a_acc = {s["doc_id"]: s["acc"] for s in golden["tasks"]["arc_challenge"]["samples"]}
    b_acc = {d: (float(gold[d] == 0) if d < 10 else a) for d, a in a_acc.items()}
    diffs = [b_acc[d] - a_acc[d] for d in sorted(a_acc)]
    want_delta = statistics.fmean(diffs)
    want_se = statistics.stdev(diffs) / math.sqrt(len(diffs))
    want_p = math.erfc(abs(want_delta / want_se) / math.sqrt(2))
    assert acc.n_paired == 40 and want_delta != 0.0
    assert acc.delta == pytest.approx(want_delta, abs=ARITHMETIC.atol)
    assert acc.se == pytest.approx(want_se, rel=ARITHMETIC.rtol)
    assert acc.p == pytest.approx(want_p, rel=SCORES.rtol)
    flips = [f for f in c.flips if f.task == "arc_challenge" and f.metric == "acc"]
    assert flips and all(f.doc_id < 10 for f in flips)
    gsm = next(d for d in c.deltas if d.task == "gsm8k")
    assert gsm.delta == 0.0 and gsm.p == 1.0
    assert main(["compare", str(ra), str(rb)]) == 0
    out = capsys.readouterr().out
    assert "flipped arc_challenge acc,none" in out


def test_duplicate_rows(golden: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, rdir = build(golden, tmp_path / "d", ["gsm8k"])
    part = next(rdir.glob("part-*.parquet"))
    df = pl.read_parquet(part)
    df.slice(4, 1).write_parquet(rdir / "part-00001.parquet")
    assert main(["score", str(rdir)]) == 2
    msg = _err(capsys)
    assert f"{part}: instance " in msg and "(gsm8k doc 4 idx 0) has a row also in " in msg
    assert str(rdir / "part-00001.parquet") in msg
