"""loglikelihood_rolling, loglikelihood (perplexity, bootstrap) and generate_until with bleu/majority vote,
scored by us and by lm-eval's own process_results + aggregation functions on the same outputs."""

from __future__ import annotations

import math
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lm_eval.api.metrics as lm_metrics  # noqa: E402
import lm_eval.api.task as lm_task  # noqa: E402
import polars as pl
import pytest

from lmeval.plans.plan import DocRecord, InstanceRecord, ModelInfo, PlanHeader, TaskSummary, instance_id_for, write_plan
from lmeval.plans.results import RunManifest, polars_schema, write_manifest
from lmeval.scorer.score import score_run
from tests.bounds import ARITHMETIC, SCORES
from tests.support import instance_record


@pytest.fixture(autouse=True)
def _no_mp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISABLE_MULTIPROC", "1")  # lm-eval's bootstrap without a process pool


def _write(tmp: Path, ts: TaskSummary, docs: list[DocRecord], rows: list[dict[str, Any]], rtype: str) -> Path:
    records: list[DocRecord | InstanceRecord] = []
    by_doc: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    out_rows = []
    for d in docs:
        records.append(d)
        for r in by_doc[d.doc_id]:
            iid = instance_id_for(ts.name, d.doc_id, r["idx"])
            # a request valid for its type (plans/plan/validate.py), its hash as the plan's
            cont = "c" if rtype == "loglikelihood" else None
            gen = {"until": ["\n\n"]} if rtype == "generate_until" else None
            rec = instance_record(ts.name, d.doc_id, r["idx"], rtype, "ctx", cont, gen)
            assert rec.instance_id == iid
            records.append(rec)
            row: dict[str, Any] = {c: None for c in polars_schema()}
            row.update(instance_id=iid, task=ts.name, request_type=rtype, request_hash=rec.request_hash)
            row.update(r)
            out_rows.append(row)
    sealed = write_plan(tmp / "p.msgpack", PlanHeader(config={}, model=ModelInfo(name="m"), tasks=[ts]), records)
    rdir = tmp / "res"
    rdir.mkdir()
    pl.DataFrame(out_rows, schema=polars_schema()).write_parquet(rdir / "part-0.parquet")
    write_manifest(rdir, RunManifest(sealed.plan_hash, str(tmp / "p.msgpack"), {"name": "m"}, "fake"))
    return rdir


def _ts(name: str, ot: str, n: int, ni: int, metric_list: list[dict[str, Any]], filter_list: Any = None) -> TaskSummary:
    return TaskSummary(name, ot, n, ni, 0, "", "", 1.0, metric_list, filter_list or [])


def test_loglikelihood_rolling(tmp_path: Path) -> None:
    r = random.Random(3)
    texts = [" ".join(r.choice(["a", "bé", "c\nd", "  e"]) for _ in range(r.randint(1, 30))) for _ in range(25)]
    docs = [DocRecord("wt", i, {"page": t}, t) for i, t in enumerate(texts)]
    lls = [-r.random() * 100 for _ in texts]
    rows = [{"doc_id": i, "idx": 0, "loglikelihood": ll} for i, ll in enumerate(lls)]
    rdir = _write(tmp_path, _ts("wt", "loglikelihood_rolling", 25, 25, []), docs, rows, "loglikelihood_rolling")
    res = score_run(str(rdir)).results["results"]["wt"]
    fake = SimpleNamespace(
        OUTPUT_TYPE="loglikelihood_rolling",
        config=SimpleNamespace(process_results=None),
        _metric_fn_list=dict.fromkeys(["word_perplexity", "byte_perplexity", "bits_per_byte"]),
        doc_to_target=lambda d: d["page"],
        count_words=lm_task.Task.count_words,
        count_bytes=lm_task.Task.count_bytes,
    )
    items: dict[str, list[Any]] = {}
    for d, ll in zip(docs, lls, strict=True):
        for k, v in lm_task.ConfigurableTask.process_results(fake, d.doc, (ll,)).items():
            items.setdefault(k, []).append(v)
    assert math.isclose(
        res["word_perplexity,none"], lm_metrics.weighted_perplexity(items["word_perplexity"]), rel_tol=ARITHMETIC.rtol
    )
    assert math.isclose(
        res["byte_perplexity,none"], lm_metrics.weighted_perplexity(items["byte_perplexity"]), rel_tol=ARITHMETIC.rtol
    )
    assert math.isclose(
        res["bits_per_byte,none"], lm_metrics.bits_per_byte(items["bits_per_byte"]), rel_tol=ARITHMETIC.rtol
    )
    assert res["bits_per_byte_stderr,none"] == "N/A"


def test_loglikelihood_perplexity_bootstrap(tmp_path: Path) -> None:
    r = random.Random(4)
    docs = [DocRecord("lb", i, {}, "word") for i in range(30)]
    rows = [{"doc_id": i, "idx": 0, "loglikelihood": -r.random() * 5, "is_greedy": r.random() < 0.4} for i in range(30)]
    rdir = _write(tmp_path, _ts("lb", "loglikelihood", 30, 30, []), docs, rows, "loglikelihood")
    res = score_run(str(rdir), bootstrap_iters=2000).results["results"]["lb"]
    ll = [x["loglikelihood"] for x in rows]
    acc = [int(x["is_greedy"]) for x in rows]
    assert math.isclose(res["perplexity,none"], lm_metrics.perplexity(ll), rel_tol=ARITHMETIC.rtol)
    want = lm_metrics.bootstrap_stderr(lm_metrics.perplexity, ll, iters=2000)
    assert math.isclose(res["perplexity_stderr,none"], want, rel_tol=SCORES.rtol)
    assert res["acc,none"] == lm_metrics.mean(acc)


def test_generate_bleu_and_majority_vote(tmp_path: Path) -> None:
    r = random.Random(5)
    words = "the cat sat on a mat with one dog".split()
    docs = [DocRecord("tr", i, {}, " ".join(r.choice(words) for _ in range(5))) for i in range(12)]
    rows: list[dict[str, Any]] = []
    for d in docs:
        outs = [" ".join(r.choice(words) for _ in range(5)) for _ in range(3)]
        outs.append(outs[1])  # majority: the second answer
        rows.append({"doc_id": d.doc_id, "idx": 0, "response": outs[0], "responses": outs})
    fl = [{"name": "maj", "filter": [{"function": "majority_vote"}, {"function": "take_first"}]}]
    ml: list[dict[str, Any]] = [{"metric": "bleu"}, {"metric": "exact_match", "ignore_case": True}]
    rdir = _write(tmp_path, _ts("tr", "generate_until", 12, 12, ml, fl), docs, rows, "generate_until")
    res = score_run(str(rdir)).results["results"]["tr"]
    items = [[d.target, row["responses"][1]] for d, row in zip(docs, rows, strict=True)]
    assert math.isclose(res["bleu,maj"], lm_metrics.bleu(items), rel_tol=ARITHMETIC.rtol)
    assert math.isclose(
        res["bleu_stderr,maj"], lm_metrics.bootstrap_stderr(lm_metrics.bleu, items, iters=100), rel_tol=SCORES.rtol
    )
    em = [lm_metrics.exact_match_hf_evaluate([p], [g], ignore_case=True)["exact_match"] for g, p in items]
    assert res["exact_match,maj"] == lm_metrics.mean(em)
