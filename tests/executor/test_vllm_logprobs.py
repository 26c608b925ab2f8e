"""Reading continuation scores out of vLLM's prompt log-probs, in both of its containers."""

from __future__ import annotations

import random

from executor.backends.vllm_engine import continuation_score


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
