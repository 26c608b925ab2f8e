"""Request semantics checked against lm-eval 0.4.13's own helpers (installed in the same environment):
rolling windows, truncation, generation kwargs and stop-string post-processing; plus the tiny tokenizer's
``_encode_pair`` rule."""

from __future__ import annotations

import random

# lm-eval 0.4.13 is the oracle: a plain import, so a missing lm-eval fails the suite instead of skipping it
import lm_eval.models.utils as lm_model_utils
import lm_eval.utils as lm_utils
import pytest

from lmeval.executor.backends.fake import ByteTokenizer
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import model_spec, resolve_model_config
from lmeval.executor.requests import (
    _disjoint,
    cut_at_stop,
    encode_pair,
    gen_params,
    rolling_windows,
    token_rule,
    truncate_for_generation,
    truncate_for_scoring,
)
from lmeval.plans.plan import ModelInfo, PlanHeader


@pytest.mark.parametrize("n_tokens,max_len", [(1, 8), (7, 8), (8, 8), (9, 8), (50, 8), (100, 17), (33, 3), (5, 1)])
def test_rolling_windows_match_lm_eval(n_tokens: int, max_len: int) -> None:
    tokens = list(range(100, 100 + n_tokens))
    ours = [_disjoint(w) for w in rolling_windows(tokens, 0, max_len)]
    theirs = [
        lm_utils.make_disjoint_window(w)
        for w in lm_utils.get_rolling_token_windows(tokens, prefix_token=0, max_seq_len=max_len, context_len=1)
    ]
    assert ours == [(list(a), list(b)) for a, b in theirs]
    assert [t for _, p in ours for t in p] == tokens  # every token predicted exactly once


def test_scoring_truncation_matches_lm_eval_vllm_rule() -> None:
    rng = random.Random(0)
    for _ in range(200):
        ctx = [rng.randrange(1000) for _ in range(rng.randint(1, 40))]
        cont = [rng.randrange(1000) for _ in range(rng.randint(1, 8))]
        max_length = rng.randint(10, 50)
        max_ctx = max_length - 1  # lm-eval's vllm _loglikelihood_tokens
        inp = (ctx + cont)[-max_ctx:]
        ctxlen = len(ctx) - max(0, len(ctx) + len(cont) - max_ctx)
        assert truncate_for_scoring(ctx, cont, max_length) == (inp, ctxlen)


def test_generation_truncation_matches_maybe_truncate() -> None:
    for n, max_gen, max_len in [(10, 5, 20), (30, 5, 20), (19, 1, 20), (100, 64, 100)]:
        ids = list(range(n))
        want, _ = lm_model_utils.maybe_truncate(ids, max_gen_toks=max_gen, max_model_len=max_len, verbose=False)
        assert truncate_for_generation(ids, max_gen, max_len, "x") == want
    with pytest.raises(ExecuteError, match="does not fit"):
        truncate_for_generation(list(range(10)), 32, 32, "x")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"until": ["Question:", "\n\n"], "do_sample": False},
        {"until": "Q:", "max_gen_toks": 32},
        {"until": [], "max_new_tokens": 17, "temperature": 0.7},
        {"max_tokens": 9, "temperature": 0.5, "do_sample": False},
        {"do_sample": True, "temperature": 0.8, "top_p": 0.95, "seed": 3},
        {"until": ["<|end_of_text|>"], "temperature": 0.0},
    ],
)
def test_gen_kwargs_match_lm_eval(kwargs: dict) -> None:
    eos = "<|end_of_text|>"
    theirs, until, max_toks = _lm_eval_modify(kwargs, eos)
    params, ours_until = gen_params(kwargs, eos, 256, 1, "ab" * 32, "x")
    assert ours_until == until == params.stop
    assert params.max_tokens == max_toks
    assert params.temperature == float(theirs.get("temperature", 0.0))
    if "top_p" in theirs:
        assert params.top_p == theirs["top_p"]
    if "seed" in kwargs:
        assert params.seed == kwargs["seed"]


def _lm_eval_modify(kwargs: dict, eos: str) -> tuple[dict, list[str], int]:
    """lm-eval's ``VLLM.modify_gen_kwargs`` (its module needs a ``vllm`` distribution to import), step by step:
    ``normalize_gen_kwargs`` then ``handle_stop_sequences``."""
    kw = dict(lm_model_utils.normalize_gen_kwargs(dict(kwargs), default_max_gen_toks=256))
    until = lm_model_utils.handle_stop_sequences(kw.pop("until", None), eos=eos)
    return kw, until, int(kw.pop("max_gen_toks", 256))


def test_sampled_requests_get_a_seed_from_their_hash_and_bad_kwargs_fail() -> None:
    p1, _ = gen_params({"temperature": 0.7}, None, 16, 4, "0123abcd" + "0" * 56, "x")
    assert p1.seed == 0x0123ABCD and p1.n == 4 and not p1.greedy
    with pytest.raises(ExecuteError, match="unsupported generation_kwargs num_beams"):
        gen_params({"num_beams": 4}, None, 16, 1, "0" * 64, "t doc 3")
    with pytest.raises(ExecuteError, match="until must be"):
        gen_params({"until": 3}, None, 16, 1, "0" * 64, "x")


def test_cut_at_stop_matches_postprocess() -> None:
    for text in ["The answer is 4.\nQuestion: next", "no stop here", "\n\nlead", "a<|end_of_text|>b"]:
        until = ["Question:", "\n\n", "<|end_of_text|>", ""]
        assert cut_at_stop(text, until) == lm_model_utils.postprocess_generated_text(text, until, None)


def test_encode_pair_moves_trailing_space_and_handles_empty_context(tiny_model) -> None:  # type: ignore[no-untyped-def]
    from lmeval.executor.backends.base import load_hf_tokenizer

    tok = load_hf_tokenizer(tiny_model)
    off = token_rule(None, False, None, tok)
    ctx, cont = encode_pair(tok, "Question: 2+2?\nAnswer: ", "4", off)
    assert ctx == tok.encode("Question: 2+2?\nAnswer:", False)
    assert ctx + cont == tok.encode("Question: 2+2?\nAnswer: 4", False)
    assert tok.decode(cont) == " 4"
    ctx, cont = encode_pair(tok, "", "Paris", off)
    assert ctx == [tok.bos_token_id] and cont == tok.encode("Paris", False)
    b = ByteTokenizer()
    on = token_rule(None, True, None, b)
    assert encode_pair(b, "ab ", "c", on) == ([256, 97, 98], [32, 99])
    # unset = the tokenizer's default (this one adds BOS); a text starting with the BOS text gets no second one
    default = token_rule(None, None, None, b)
    assert encode_pair(b, "ab ", "c", default) == ([256, 97, 98], [32, 99])
    assert encode_pair(b, "<bos>ab", "c", default) == (list(b"<bos>ab"), [99])
    # an empty context whose continuation already starts with the prefix token is split there (lm-eval)
    assert encode_pair(b, "", "xy", token_rule(None, None, ord("x"), b)) == ([ord("x")], [ord("y")])
    assert encode_pair(b, "", "xy", token_rule(None, None, 7, b)) == ([7], list(b"xy"))


def test_overrides_apply_in_order_on_the_plan_model_config() -> None:
    header = PlanHeader(
        config={"model": {"name": "tiny", "path": None, "backend": "vllm", "engine": {"seed": 0}}},
        model=ModelInfo(name="tiny"),
        tasks=[],
    )
    cfg = resolve_model_config(
        header, ["model.engine.gpu_memory_utilization=0.8", "+model.engine.max_num_seqs=4", "model.backend=hf"]
    )
    assert cfg["engine"] == {"seed": 0, "gpu_memory_utilization": 0.8, "max_num_seqs": 4}
    assert model_spec(cfg).backend == "hf"
    cfg = resolve_model_config(header, ["model.engine.seed=5", "model=tiny"])  # model=NAME replaces everything
    assert cfg["engine"]["seed"] == 0 and cfg["dtype"] == "auto" and "defaults" not in cfg


def test_generated_text_drops_special_tokens_as_lm_eval_does() -> None:
    """lm-eval decodes the final generation with skip_special_tokens=True, then cuts at ``until``."""
    from transformers import AutoTokenizer

    from lmeval.common.tinymodel import ensure_tiny_model
    from lmeval.executor.backends.base import HFTokenizer
    from lmeval.executor.requests import GenInput, GenJob, GenOutput, GenParams, Sample, gen_result

    tok = HFTokenizer(AutoTokenizer.from_pretrained(str(ensure_tiny_model())))
    words = tok.encode(" forty two", add_special_tokens=False)
    more = tok.encode(" Question: next", add_special_tokens=False)
    ids = words[:1] + [2] + words[1:] + more  # <|im_start|> (id 2) emitted mid-answer
    params = GenParams(max_tokens=16, stop=["Question:"], temperature=0.0, n=1)
    job = GenJob("h", GenInput([5], params, "h", "ctx"), ["Question:"])
    res = gen_result(job, GenOutput([Sample(text=None, token_ids=ids, finish_reason="stop")]), tok)
    assert res.responses == [" forty two "]
