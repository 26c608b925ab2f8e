"""Thinking and answer budgets enforced (``plans/vocab/budgets.py`` says what the plan holds): budget forcing.

Generation inputs with a ``budget`` run in two phases through the same backend call. Phase 1: up to
``thinking`` tokens, with the end marker as the only stop string. A sample that wrote the marker is closed;
one cut by the budget (finish reason ``length``) gets the marker's token ids appended (``forced``); one that
ended on EOS without it is done (its whole response is reasoning). Phase 2, for closed and forced samples:
prompt + phase-1 ids (+ the marker's ids) as the prompt, up to ``answer`` tokens with the task's stop strings;
a sampled request's samples each continue with a seed derived from the request's. The merged sample's ids are
phase 1 + marker + phase 2, ``answer_from`` where phase 2 starts (``executor/answers.py`` cuts only the answer
at stop strings) and its finish reason phase 2's. Inputs without a budget pass straight through. Nothing is
rendered or encoded here: token ids are only concatenated (a text-only backend's phase-1 text is encoded
by the backend's tokenizer to continue from).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from lmeval.executor.backends import Backend
from lmeval.executor.errors import ExecuteError
from lmeval.executor.requests import GenInput, GenOutput, Sample, Tokenizer
from lmeval.plans import ThinkingBudget


def generate(backend: Backend, inputs: Sequence[GenInput]) -> Iterator[tuple[int, GenOutput]]:
    """``backend.generate(inputs)``, with every budgeted input run in two phases (module docstring)."""
    if all(x.budget is None for x in inputs):
        yield from backend.generate(inputs)
        return
    phase1 = [x if x.budget is None else thinking_input(x, x.budget) for x in inputs]
    firsts: dict[int, GenOutput] = {}
    for i, out in backend.generate(phase1):
        if inputs[i].budget is None:
            yield i, out
        else:
            firsts[i] = out
    yield from _answer_phase(backend, inputs, firsts)


def thinking_input(x: GenInput, b: ThinkingBudget) -> GenInput:
    return replace(x, params=replace(x.params, max_tokens=b.thinking, stop=[b.end]), budget=None)


def _answer_phase(
    backend: Backend, inputs: Sequence[GenInput], firsts: dict[int, GenOutput]
) -> Iterator[tuple[int, GenOutput]]:
    tok = backend.tokenizer
    done: dict[int, list[Sample | None]] = {}
    prefixes: dict[tuple[int, int], tuple[list[int], bool]] = {}
    second: list[GenInput] = []
    owner: list[tuple[int, int]] = []
    for i, out in firsts.items():
        x, b = inputs[i], inputs[i].budget
        assert b is not None
        done[i] = [None] * len(out.samples)
        for k, s in enumerate(out.samples):
            ids = phase1_ids(s, tok, x)
            closed = _wrote_marker(s, ids, b, tok)
            if not closed and s.finish_reason != "length":  # EOS inside the block: the response ends
                done[i][k] = Sample(None, ids, s.finish_reason, answer_from=len(ids))
                continue
            # the marker's ids follow unless phase 1's ids hold it (a text-only backend's text never does)
            prefix = ids if closed and s.token_ids is not None else ids + list(b.end_ids)
            prefixes[(i, k)] = (prefix, not closed)
            second.append(answer_input(x, b, prefix, k))
            owner.append((i, k))
    for i in [i for i, ss in done.items() if all(s is not None for s in ss)]:
        yield i, GenOutput([s for s in done.pop(i) if s is not None])
    for j, out in backend.generate(second):
        i, k = owner[j]
        prefix, forced = prefixes[(i, k)]
        s = out.samples[0]
        ids2 = s.token_ids if s.token_ids is not None else _encode(tok, s.text or "", inputs[i])
        done[i][k] = Sample(None, prefix + list(ids2), s.finish_reason, answer_from=len(prefix), forced=forced)
        if all(t is not None for t in done[i]):
            yield i, GenOutput([t for t in done.pop(i) if t is not None])


def answer_input(x: GenInput, b: ThinkingBudget, prefix: list[int], k: int) -> GenInput:
    """Phase 2 of sample ``k`` of ``x``: its prompt + ``prefix``, ``b.answer`` tokens, one sample."""
    seed = x.params.seed if x.params.seed is None or k == 0 else (x.params.seed + k) % (1 << 32)
    params = replace(x.params, max_tokens=b.answer, n=1, seed=seed)
    return replace(x, ids=list(x.ids) + prefix, params=params, budget=None, key=f"{x.key}:answer:{k}")


def phase1_ids(s: Sample, tok: Tokenizer | None, x: GenInput) -> list[int]:
    return list(s.token_ids) if s.token_ids is not None else _encode(tok, s.text or "", x)


def _encode(tok: Tokenizer | None, text: str, x: GenInput) -> list[int]:
    if tok is None:
        raise ExecuteError(f"request {x.key}: a thinking budget needs token ids or a tokenizer (the backend has none)")
    return tok.encode(text, add_special_tokens=False)


def _wrote_marker(s: Sample, ids: list[int], b: ThinkingBudget, tok: Tokenizer | None) -> bool:
    """Whether phase 1 ended on the end marker (not on the budget or EOS). A text-only backend strips the
    stop string from its text: there a ``stop`` finish is the marker."""
    if s.token_ids is None:
        return s.finish_reason != "length"
    if ids[-len(b.end_ids) :] == list(b.end_ids):
        return True
    decode: Any = getattr(tok, "decode_with_special", None) or (tok.decode if tok is not None else None)
    return decode is not None and b.end in decode(ids)
