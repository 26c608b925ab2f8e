"""Reading continuation scores out of vLLM's prompt log-probs, in both of its containers; the order that lets
requests sharing a context read it from the prefix cache."""

from __future__ import annotations

import random

from lmeval.executor.backends.vllm_engine import continuation_score, reuse_order
from lmeval.executor.requests import ScoreInput


def _containers(ids: list[int], seed: int, extra: int) -> tuple[list, object]:
    """The same prompt log-probs as vLLM's list of dicts and as its FlatLogprobs (``extra`` top-k entries
    per position beside the prompt token, which may come first or not)."""
    from vllm.logprobs import FlatLogprobs, Logprob

    rng = random.Random(seed)
    as_list: list = [None]
    flat = FlatLogprobs()
    flat.append(None)
    for pos in range(1, len(ids)):
        entries = {ids[pos]: Logprob(logprob=-rng.random() * 5, rank=rng.choice([1, 1, 2, 7]))}
        for k in range(extra):
            entries.setdefault(1000 + k, Logprob(logprob=-0.01 * (k + 1), rank=k + 1))
        if rng.random() < 0.5:  # put the prompt token last
            entries = dict(reversed(list(entries.items())))
        as_list.append(entries)
        flat.append(entries)
    return as_list, flat


def test_flat_and_dict_log_probs_give_the_same_score() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        ids = [rng.randrange(900) for _ in range(rng.randint(2, 40))]
        ctxlen = rng.randint(1, len(ids) - 1)
        as_list, flat = _containers(ids, seed, extra=seed % 3)
        a = continuation_score(as_list, ids, ctxlen)
        b = continuation_score(flat, ids, ctxlen)
        assert a == b
        want = sum(as_list[p][ids[p]].logprob for p in range(ctxlen, len(ids)))
        assert a.logprob == want
        assert a.is_greedy == all(as_list[p][ids[p]].rank == 1 for p in range(ctxlen, len(ids)))


def _inp(ctx: list[int], cont: list[int]) -> ScoreInput:
    return ScoreInput(ctx + cont, len(ctx), "k")


def test_reuse_order_puts_each_context_first_then_its_sharers_window_by_window() -> None:
    a, b, c = [1] * 10, [2] * 10, [3] * 10
    inputs = [_inp(a, [5]), _inp(a, [6]), _inp(b, [5]), _inp(c, [7]), _inp(b, [6]), _inp(a, [7]), _inp(c, [8])]
    # windows of at least 20 tokens of first-of-context inputs: {a, b} then {c}
    assert reuse_order(inputs, 20) == [0, 2, 1, 5, 4, 3, 6]
    assert reuse_order(inputs, 1000) == [0, 2, 3, 1, 5, 4, 6]
    assert reuse_order(inputs, 1) == [0, 1, 5, 2, 4, 3, 6]
    assert reuse_order([], 10) == []
