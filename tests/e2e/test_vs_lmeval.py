"""End to end against lm-evaluation-harness: ``lmeval run`` (hf and vllm backends) vs ``lm_eval --model hf``.

arc_easy (0-shot, acc/acc_norm) and gsm8k (5-shot, strict-match and flexible-extract) on the tiny model,
first ``LIMIT`` documents, greedy generation capped at ``MAX_GEN_TOKS`` tokens on both sides (lm-eval's
``--gen_kwargs max_gen_toks=N``, our ``run.gen_kwargs``). lm-eval runs once per settings and its output is
cached (``tests/e2e/lmeval_ref.py``); our side always runs. Full-size comparison: ``bench/e2e_vs_lmeval.py``.

No excusals: lm-eval runs at batch size 1, so its HF generation stops each sequence at its own stop token
(at batch size 8 a finished sequence runs on until the whole batch is done, the "batch quirk"), and every
generation, filtered response and per-document metric must be equal. Every request's log-likelihood lies
within the stated bound against lm-eval (``tests/bounds.py``: ``VS_LM_EVAL``); the vllm side runs with AVX2
kernels forced (``tests/kernelpath``), so on an AVX-512 machine the two backends cover both kernel kinds. A
flipped multiple-choice document is allowed only when both sides' gaps between the two choices are within
what that bound allows (``bounds.tie_gap``), and its metric then differs by exactly (flips)/n.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import ARITHMETIC, SCORES, VS_LM_EVAL
from tests.e2e import compare as cmp
from tests.e2e import lmeval_ref
from tests.e2e.background import in_background
from tests.e2e.ours import AVX2_ENV, OurRun, lmeval_run

pytestmark = [pytest.mark.vllm, pytest.mark.lmeval_parity]

LIMIT = 24
MAX_GEN_TOKS = 32
FEWSHOT = {"arc_easy": 0, "gsm8k": 5}  # each task's own default in lm-eval's YAML, written in explicitly


@pytest.fixture(scope="module")
def ref_job() -> Future[dict[str, Any]]:
    """lm-eval's run, started before our first run and computed beside it (tests/e2e/background.py)."""
    spec = lmeval_ref.make_spec(
        {t: {"limit": LIMIT, "num_fewshot": n} for t, n in FEWSHOT.items()},
        gen_kwargs={"max_gen_toks": MAX_GEN_TOKS},
        batch_size=1,
    )
    return in_background(lmeval_ref.reference, spec)


@pytest.fixture(scope="module")
def ref(ref_job: Future[dict[str, Any]]) -> dict[str, Any]:
    return ref_job.result()


@pytest.fixture(scope="module", params=["hf", "vllm"])
def ours(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ref_job: Future[dict[str, Any]]
) -> OurRun:
    work = tmp_path_factory.mktemp(f"e2e-{request.param}")
    env = AVX2_ENV if request.param == "vllm" else None  # the other kernel kind on an AVX-512 machine
    return lmeval_run(list(FEWSHOT), LIMIT, request.param, work, str(lmeval_ref.data_dir()), max_gen_toks=MAX_GEN_TOKS,
                      env_extra=env)  # fmt: skip


@pytest.fixture(scope="module")
def comparison(ours: OurRun, ref: dict[str, Any]) -> cmp.Comparison:
    return cmp.compare(ours.out, ref, plan=ours.plan)


def test_same_shots_and_docs(comparison: cmp.Comparison, ref: dict[str, Any]) -> None:
    assert comparison.n_shot_ours == FEWSHOT
    assert comparison.n_shot_ref == FEWSHOT
    assert {t: v["effective"] for t, v in ref["n-samples"].items()} == {t: LIMIT for t in FEWSHOT}


def test_same_requests(comparison: cmp.Comparison) -> None:
    for t, rep in comparison.tasks.items():
        assert rep.n_docs == LIMIT, t
        assert rep.prompt_mismatches == [], t


def test_aggregates_equal(comparison: cmp.Comparison, ours: OurRun) -> None:
    rows = [r for r in comparison.rows if r.ours is None or r.ref is None or not SCORES.close(r.ours, r.ref)]
    flips = [f for t in comparison.tasks.values() for f in t.flips]
    # a flip is a tie only within the gap the per-request bound allows between those two choices
    assert all(f.tie for f in flips), flips
    n_flips: dict[tuple[str, str], int] = {}
    for f in flips:
        n_flips[(f.task, f.metric)] = n_flips.get((f.task, f.metric), 0) + 1
    for r in rows:
        metric = r.key.split(",")[0]
        if metric.endswith("_stderr"):  # the stderr of a mean of 0/1 scores follows the mean it belongs to
            assert (r.task, metric.removesuffix("_stderr")) in n_flips, cmp.render_markdown(
                cmp.table({ours.backend: comparison})
            )
            continue
        k = n_flips.get((r.task, metric), 0)
        steps = r.diff * LIMIT  # |ours - lm-eval| in documents
        assert k > 0 and abs(steps - round(steps)) < ARITHMETIC.atol and 1 <= round(steps) <= k, (r, k)
    metric_keys = {(r.task, r.key) for r in comparison.rows}
    for task, metric in [("arc_easy", "acc,none"), ("arc_easy", "acc_norm,none")] + [
        ("gsm8k", f"exact_match,{f}") for f in ("strict-match", "flexible-extract")
    ]:
        assert (task, metric) in metric_keys
        assert (task, metric.replace(",", "_stderr,")) in metric_keys


def test_loglikelihoods_close(comparison: cmp.Comparison, ours: OurRun) -> None:
    rep = comparison.tasks["arc_easy"]
    assert len(rep.ll_pairs) >= 3 * LIMIT
    assert [p for p in rep.ll_pairs if not VS_LM_EVAL.close(*p)] == [], rep.max_abs_ll_diff


def test_generations_and_filters_equal(comparison: cmp.Comparison) -> None:
    rep = comparison.tasks["gsm8k"]
    assert rep.generation_mismatches == []
    assert rep.special_token_docs == []
    assert rep.filtered_mismatches == []
    assert rep.doc_metric_mismatches == []
    # lm-eval ran at batch size 1: no document may need the batch-generation explanation
    assert rep.quirk_docs == []


def test_lm_eval_side_is_real(ref: dict[str, Any]) -> None:
    """The reference is lm-eval's own output: its logged requests and per-sample metrics are all there."""
    assert ref["lm_eval_version"] == "0.4.13"
    assert ref["spec"]["batch_size"] == 1
    assert len(ref["samples"]["arc_easy"]) == LIMIT
    assert len(ref["samples"]["gsm8k"]) == 2 * LIMIT  # one logged sample per filter
    assert Path(ref["spec"]["model"]).is_dir()
    for s in ref["samples"]["arc_easy"]:
        assert len(s["resps"]) == len(s["arguments"]) >= 3
