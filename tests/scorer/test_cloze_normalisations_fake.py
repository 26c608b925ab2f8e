"""``acc_per_token`` and ``acc_pmi`` of ``arc_challenge@cf`` equal a hand computation from the run's own
log-likelihoods, on the fake backend (#53 acceptance 4: the per-token normalisation was guarded only by the
real-model test, tests/e2e/test_format_normalisations.py, and only as far as SmolLM2's answers happened to
tell the normalisations apart; the fake backend's log-likelihoods tell them apart on purpose)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from lmeval.plans.plan import DocRecord, PlanReader
from lmeval.plans.results import read_results
from tests.support import cli_in_process as cli
from tests.support import data_dir

N_DOCS = 30


def _argmax(xs: list[float]) -> int:
    return max(range(len(xs)), key=lambda i: (xs[i], -i))  # numpy's argmax: the first of equal maxima


def test_per_token_and_pmi_equal_a_hand_computation(tmp_path: Path) -> None:
    plan, out = tmp_path / "plan.msgpack", tmp_path / "results"
    for argv in (
        ("compile", "+task=arc_challenge@cf", f"run.data_dir={data_dir()}", f"run.limit={N_DOCS}", "model=tiny",
         "--out", str(plan)),
        ("execute", str(plan), "--out", str(out), "model.backend=fake", "--no-progress"),
        ("score", str(out), "--quiet"),
    ):  # fmt: skip
        rc, _, err = cli(*argv)
        assert rc == 0, err
    task = "arc_challenge@cf"
    with PlanReader(plan) as r:
        docs = {d.doc_id: d for d in r.records(task) if isinstance(d, DocRecord)}
    rows = read_results(out).filter(pl.col("task") == task)
    ll = {(d, i): v for d, i, v in rows.select("doc_id", "idx", "loglikelihood").iter_rows()}
    ntok = {(d, i): n for d, i, n in rows.select("doc_id", "idx", "n_continuation_tokens").iter_rows()}
    ours = {
        r["doc_id"]: r
        for r in pl.read_parquet(out / "samples.parquet").filter(pl.col("task") == task).iter_rows(named=True)
    }
    apart = 0
    for doc_id, doc in docs.items():
        choices = list(doc.choices or [])
        k, gold = len(choices), int(doc.target)
        cond = [ll[(doc_id, i)] for i in range(k)]
        uncond = [ll[(doc_id, k + i)] for i in range(k)]
        per_token = _argmax([c / ntok[(doc_id, i)] for i, c in enumerate(cond)])
        per_char = _argmax([c / len(f" {ch}") for c, ch in zip(cond, choices, strict=True)])
        pmi = _argmax([c - u for c, u in zip(cond, uncond, strict=True)])
        assert ours[doc_id]["acc_per_token"] == float(per_token == gold), doc_id
        assert ours[doc_id]["acc_pmi"] == float(pmi == gold), doc_id
        apart += (per_token == gold) != (per_char == gold)
    assert apart > 0  # per token and per character score some document differently: the check bites
