"""A JSONL task spec through compile → results → score: per-category and overall aggregates."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from lmeval import compiler, scorer
from lmeval.plans import read_plan
from lmeval.plans.results.manifest import RunManifest, polars_schema, write_manifest
from tests.bounds import ARITHMETIC

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spec" / "tasks.jsonl"

CODE = {
    "code-001": "```python\ndef add(a, b):\n    return a + b\n```",
    "code-002": "def is_even(n):\n    return n % 2 == 0",
}


def _results(tmp_path: Path, answer: dict[str, str]) -> Path:
    plan_path = compiler.compile_to_file(["+task=jsonl", f"task.path={FIXTURE}"], out=str(tmp_path / "p.msgpack"))
    plan = read_plan(plan_path)
    docs = {d.doc_id: d.doc for d in plan.docs}
    rows = []
    for inst in plan.instances:
        text = answer[docs[inst.doc_id]["task_id"]]
        rows.append(
            {
                "instance_id": inst.instance_id,
                "task": inst.task,
                "doc_id": inst.doc_id,
                "idx": inst.idx,
                "request_type": inst.request_type,
                "request_hash": inst.request_hash,
                "loglikelihood": None,
                "is_greedy": None,
                "n_continuation_tokens": 1,
                "response": text,
                "responses": [text],
                "finish_reason": "stop",
            }
        )
    out = tmp_path / "results"
    out.mkdir()
    pl.DataFrame(rows, schema=polars_schema()).write_parquet(out / "part-000000.parquet")
    write_manifest(
        out,
        RunManifest(plan_hash=plan.header.plan_hash, plan_path=str(plan_path), model={"name": "tiny"}, backend="fake"),
    )
    return out


def _gold() -> dict[str, str]:
    out = {}
    for line in FIXTURE.read_text().splitlines():
        rec = json.loads(line)
        out[rec["task_id"]] = CODE.get(rec["task_id"], rec["targets"][0])
    return out


def test_gold_answers_score_one_in_every_category(tmp_path: Path) -> None:
    res = json.loads((scorer.score(str(_results(tmp_path, _gold())), console=False) / "results.json").read_text())
    spec = res["spec"]["jsonl"]
    assert set(spec["categories"]) == {"arithmetic", "mcq", "code_exec", "classification", "summary"}
    for cat, agg in spec["categories"].items():
        assert agg["n"] == 2, cat
        assert agg["score"] == pytest.approx(1.0, abs=ARITHMETIC.atol), cat
    assert spec["overall"] == pytest.approx({"score": 1.0, "macro": 1.0, "n": 10}, abs=ARITHMETIC.atol)


def test_one_wrong_answer_moves_only_its_category(tmp_path: Path) -> None:
    answers = _gold()
    answers["code-002"] = "def is_even(n):\n    return n % 2 == 1"
    res = json.loads((scorer.score(str(_results(tmp_path, answers)), console=False) / "results.json").read_text())
    cats = res["spec"]["jsonl"]["categories"]
    assert cats["code_exec"]["score"] == 0.5
    assert all(v["score"] == pytest.approx(1.0, abs=ARITHMETIC.atol) for c, v in cats.items() if c != "code_exec")
    assert res["spec"]["jsonl"]["overall"]["score"] == pytest.approx(0.9, abs=ARITHMETIC.atol)
