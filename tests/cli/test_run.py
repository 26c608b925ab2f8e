"""``lmeval run +task=arith`` end to end through ``lmeval.cli.main``: compile → execute (real vLLM) → score.

One engine start for the module: the run happens once (module fixture); ``score`` and ``execute`` are
rerun on its output afterwards, and those must not start a model at all.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.plans.plan import InstanceRecord, PlanReader, read_header
from lmeval.plans.results import part_files, read_manifest, read_results
from tests.bounds import ARITHMETIC

pytestmark = pytest.mark.vllm

LIMIT = 12


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv))
    return rc, buf.getvalue()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    base = tmp_path_factory.mktemp("run")
    out, plan = base / "results", base / "arith.msgpack"
    t = time.monotonic()
    rc, stdout = cli(
        "run", "+task=arith", f"run.limit={LIMIT}", "--out", str(out), "--plan-out", str(plan), "--no-progress"
    )
    return {"rc": rc, "stdout": stdout, "out": out, "plan": plan, "seconds": time.monotonic() - t}


def _instances(plan: Path) -> list[InstanceRecord]:
    with PlanReader(plan) as r:
        return [rec for rec in r if isinstance(rec, InstanceRecord)]


def _results(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "results.json").read_text()))


def test_run_prints_results_dir_last(run: dict[str, Any]) -> None:
    assert run["rc"] == 0
    lines = run["stdout"].strip().splitlines()
    assert Path(lines[-1]) == run["out"]
    assert run["plan"].is_file()


def test_results_json_has_arith_exact_match_and_stderr(run: dict[str, Any]) -> None:
    res = _results(run["out"])
    assert res["plan_hash"] == read_header(run["plan"]).plan_hash
    arith = res["results"]["arith"]
    em, se = arith["exact_match,strict-match"], arith["exact_match_stderr,strict-match"]
    assert res["n-samples"]["arith"] == {"original": LIMIT, "effective": LIMIT}
    assert res["n-shot"]["arith"] == 3
    assert res["higher_is_better"]["arith"] == {"exact_match": True}
    # oracle: lm-eval 0.4.13's own filter, metric and stderr functions over the raw Parquet responses and the
    # plan's targets (not lmeval's scorer)
    from lm_eval.api.metrics import exact_match_hf_evaluate, mean_stderr
    from lm_eval.filters.extraction import WhitespaceFilter

    from lmeval.plans.plan import read_plan

    targets = {d.doc_id: d.target for d in read_plan(run["plan"]).docs}
    raw = dict(read_results(run["out"]).select(["doc_id", "response"]).iter_rows())
    docs = sorted(raw)
    filtered = [r[0] for r in WhitespaceFilter().apply([[raw[d]] for d in docs], [{}] * len(docs))]
    want = [
        exact_match_hf_evaluate(predictions=[f], references=[targets[d]], ignore_case=True)["exact_match"]
        for f, d in zip(filtered, docs, strict=True)
    ]
    assert em == pytest.approx(sum(want) / len(want), abs=ARITHMETIC.atol)
    assert se == pytest.approx(mean_stderr(want), abs=ARITHMETIC.atol)
    samples = pl.read_parquet(run["out"] / "samples.parquet").filter(pl.col("filter") == "strict-match")
    assert dict(samples.select(["doc_id", "exact_match"]).iter_rows()) == dict(zip(docs, want, strict=True))


def test_samples_parquet_one_row_per_doc(run: dict[str, Any]) -> None:
    samples = pl.read_parquet(run["out"] / "samples.parquet")
    assert set(samples["task"].to_list()) == {"arith"}
    assert set(samples["filter"].to_list()) == {"strict-match"}
    assert sorted(samples["doc_id"].to_list()) == list(range(LIMIT))
    # each row's filtered response is the raw generation with whitespace removed (arith's filter)
    raw = dict(read_results(run["out"]).select(["doc_id", "response"]).iter_rows())
    for doc_id, filtered in samples.select(["doc_id", "filtered"]).iter_rows():
        assert filtered == raw[doc_id].strip()


def test_parquet_rows_are_the_plans_instances(run: dict[str, Any]) -> None:
    rows = read_results(run["out"])
    plan = {i.instance_id: i for i in _instances(run["plan"])}
    assert len(plan) == LIMIT  # one generate_until request per arith doc
    assert sorted(rows["instance_id"].to_list()) == sorted(plan)
    for iid, doc_id, rhash, rtype in rows.select(["instance_id", "doc_id", "request_hash", "request_type"]).iter_rows():
        assert (doc_id, rhash, rtype) == (plan[iid].doc_id, plan[iid].request_hash, plan[iid].request_type)
    assert rows["response"].null_count() == 0


def test_score_again_gives_the_same_results(run: dict[str, Any]) -> None:
    before = _results(run["out"])
    rc, stdout = cli("score", str(run["out"]), "--quiet")
    assert rc == 0
    assert Path(stdout.strip().splitlines()[-1]) == run["out"]
    after = _results(run["out"])
    for key in ("results", "n-samples", "n-shot", "configs", "versions", "higher_is_better", "plan_hash"):
        assert after[key] == before[key], key


def _no_engine(*_a: Any, **_k: Any) -> Any:
    raise AssertionError("execute started a model although every instance was already done")


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in part_files(out)}


def test_execute_on_a_finished_dir_recomputes_nothing(run: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from lmeval import executor

    monkeypatch.setattr(executor.run, "_load_backend", _no_engine)
    parts, manifest = _snapshot(run["out"]), (run["out"] / "manifest.json").read_bytes()
    assert read_manifest(run["out"]).stats["executed"] == LIMIT
    rc, stdout = cli("execute", str(run["plan"]), "--out", str(run["out"]), "--no-progress")
    assert rc == 0 and Path(stdout.strip().splitlines()[-1]) == run["out"]
    assert _snapshot(run["out"]) == parts
    assert (run["out"] / "manifest.json").read_bytes() == manifest


def test_execute_resumes_an_interrupted_run_without_recomputing(
    run: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A run killed after its last part was written but before the manifest said finished."""
    from lmeval import executor

    monkeypatch.setattr(executor.run, "_load_backend", _no_engine)
    out = tmp_path / "copy"
    shutil.copytree(run["out"], out)
    m = json.loads((out / "manifest.json").read_text())
    m["finished"] = None
    (out / "manifest.json").write_text(json.dumps(m))
    parts = _snapshot(out)
    rc, stdout = cli("execute", str(run["plan"]), "--out", str(out), "--no-progress")
    assert rc == 0 and Path(stdout.strip().splitlines()[-1]) == out
    stats = read_manifest(out).stats
    assert stats["planned"] == LIMIT
    assert stats["resumed"] == LIMIT
    assert stats["executed"] == 0 and stats["requests"] == 0 and stats["load_ms"] == 0
    assert read_manifest(out).finished
    assert _snapshot(out) == parts
    # and the resumed directory scores to the same numbers
    rc, _ = cli("score", str(out), "--quiet")
    assert rc == 0
    assert _results(out)["results"] == _results(run["out"])["results"]
