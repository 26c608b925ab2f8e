"""``lmeval export --format eee``: Every Eval Ever files validated against the official schemas (vendored from
every-eval-ever 0.3.0), carrying the run's scores and lmeval's provenance.

Runs: a real pipeline (arc_easy multiple-choice and the generated arith generation task, compiled with the tiny
model's tokenizer, executed by the fake backend, scored) and the scorer's ``fake`` and ``metrics`` goldens.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from lmeval.plans.plan import InstanceRecord, PlanReader
from lmeval.report.export import export
from lmeval.report.export.eee import SCHEMA_DIR
from lmeval.scorer.score import score_run
from tests.bounds import ARITHMETIC
from tests.report.conftest import pipeline
from tests.scorer.golden_io import build, load_golden


def _validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    assert schema["version"] == "0.3.0" and schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


AGG, INST = _validator("eval.schema.json"), _validator("instance_level_eval.schema.json")


@pytest.fixture(scope="module", params=["pipeline", "fake", "metrics"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp(f"eee-{request.param}")
    if request.param == "pipeline":
        rdir = pipeline(base, "run", "+task=[arc_easy,arith]", "run.limit=20", "run.num_fewshot=0")
    else:
        _, rdir = build(load_golden(request.param), base / "golden")
        assert not score_run(str(rdir), bootstrap_iters=10).partial
    files = export(str(rdir), "eee", str(base / "eee"))
    results = json.loads((rdir / "results.json").read_text(encoding="utf-8"))
    return {"rdir": rdir, "out": base / "eee", "files": files, "results": results, "name": request.param}


def _aggregates(run: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    return [(p, json.loads(p.read_text(encoding="utf-8"))) for p in run["files"] if p.suffix == ".json"]


def test_every_file_validates(run: dict[str, Any]) -> None:
    aggs = _aggregates(run)
    assert len(aggs) == len(run["results"]["configs"]) and len(run["files"]) == 2 * len(aggs)
    n = 0
    for p, agg in aggs:
        errors = [e.message for e in AGG.iter_errors(agg)]
        assert not errors, (p, errors[:3])
        samples = run["out"] / agg["detailed_evaluation_results"]["file_path"]
        assert samples.name == f"{p.stem}_samples.jsonl"
        text = samples.read_text(encoding="utf-8")
        assert hashlib.sha256(text.encode()).hexdigest() == agg["detailed_evaluation_results"]["checksum"]
        lines = [json.loads(x) for x in text.splitlines()]
        assert len(lines) == agg["detailed_evaluation_results"]["total_rows"] > 0
        for line in lines:
            errors = [e.message for e in INST.iter_errors(line)]
            assert not errors, (samples, errors[:3])
            assert line["evaluation_id"] == agg["evaluation_id"]
        n += len(lines)
    assert n >= 40


def test_scores_are_the_runs(run: dict[str, Any]) -> None:
    """Every aggregate result is results.json's value and stderr; every instance line's result id is one of
    its file's aggregate results, and the mean of its scores is that result (mean-aggregated metrics)."""
    res = run["results"]["results"]
    for _, agg in _aggregates(run):
        task = agg["evaluation_id"].split("/")[0]
        by_id = {}
        for r in agg["evaluation_results"]:
            metric, _, filt = r["evaluation_result_id"].partition(":")
            key = f"{metric},{filt or 'none'}"
            assert r["score_details"]["score"] == res[task][key]
            se = res[task].get(f"{metric}_stderr,{filt or 'none'}")
            if isinstance(se, float):
                assert r["score_details"]["uncertainty"]["standard_error"]["value"] == se
            by_id[r["evaluation_result_id"]] = r["score_details"]["score"]
        lines = [json.loads(x) for x in (run["out"] / agg["detailed_evaluation_results"]["file_path"]).open()]
        scores: dict[str, list[float]] = {}
        for line in lines:
            if "evaluation_result_id" in line:
                assert line["evaluation_result_id"] in by_id
                scores.setdefault(line["evaluation_result_id"], []).append(line["evaluation"]["score"])
            else:  # only corpus-level values (bleu, perplexity, ...): they are in the metadata
                assert json.loads(line["metadata"]["lm_eval_metrics"])
        for rid in ("acc", "exact_match", "exact_match:strict-match", "exact_match:flexible-extract"):
            if rid in scores:
                assert sum(scores[rid]) / len(scores[rid]) == pytest.approx(by_id[rid], abs=ARITHMETIC.atol)


def test_provenance(run: dict[str, Any]) -> None:
    """The plan hash, task hash, tokenizer hash and every Instance's request hash travel with the files."""
    with PlanReader(run["results"]["plan_path"]) as r:
        header = r.header
        hashes: dict[tuple[str, int], list[str]] = {}
        for rec in r:
            if isinstance(rec, InstanceRecord):
                hashes.setdefault((rec.task, rec.doc_id), []).append(rec.request_hash)
    tasks = {t.name: t for t in header.tasks}
    for _, agg in _aggregates(run):
        task = agg["evaluation_id"].split("/")[0]
        details = agg["eval_library"]["additional_details"]
        assert details["plan_hash"] == header.plan_hash == run["results"]["plan_hash"]
        assert details["task_hash"] == tasks[task].task_hash
        if run["name"] == "pipeline":
            assert header.model.tokenizer_hash and details["tokenizer_hash"] == header.model.tokenizer_hash
        for line in (run["out"] / agg["detailed_evaluation_results"]["file_path"]).open():
            x = json.loads(line)
            assert json.loads(x["metadata"]["request_hashes"]) == hashes[(task, int(x["sample_id"]))]
            assert x["metadata"]["plan_hash"] == header.plan_hash


def test_cli_eee(tmp_path: Path) -> None:
    import subprocess
    import sys

    _, rdir = build(load_golden("fake"), tmp_path / "golden", tasks=["gsm8k"])
    assert not score_run(str(rdir), bootstrap_iters=10).partial
    r = subprocess.run([sys.executable, "-m", "lmeval", "export", str(rdir), "--format", "eee", "-o",
                        str(tmp_path / "out")], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    written = [Path(x) for x in r.stdout.split()]
    assert sorted(p.suffix for p in written) == [".json", ".jsonl"] and all(p.is_file() for p in written)
    r = subprocess.run([sys.executable, "-m", "lmeval", "export", str(rdir), "--format", "csv"],
                       capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2 and "invalid choice" in r.stderr
