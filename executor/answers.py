"""A generation's response text and its reasoning length in tokens, from the token ids a backend returned.

``sample_text`` is lm-eval's decode-then-cut (``cut_at_stop``); a sample generated under a thinking budget
(``executor/budgets.py``) has its task's stop strings applied to its answer part only (the ids from
``answer_from``), so a ``\\n\\n`` in the reasoning does not end the response. ``reasoning_tokens`` counts the
generated tokens before the reasoning's end under the plan's ``run.reasoning`` (``plans/vocab/reasoning.py``):
what ``samples.parquet``, the report and ``compare`` show as the reasoning's length in tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from lmeval.plans import Reasoning, reasoning_end


class GeneratedText(Protocol):
    """What of ``executor.requests.Sample`` is read here."""

    @property
    def text(self) -> str | None: ...
    @property
    def token_ids(self) -> list[int] | None: ...
    @property
    def answer_from(self) -> int | None: ...


class Decoder(Protocol):
    def decode(self, ids: Sequence[int]) -> str: ...


def cut_at_stop(text: str, until: Sequence[str]) -> str:
    """lm-eval's post-processing: cut at each non-empty stop string in turn."""
    for term in until:
        if term:
            text = text.split(term)[0]
    return text


def sample_text(s: GeneratedText, tok: Decoder | None, until: Sequence[str]) -> str:
    """One sample's response: its ids decoded (else the backend's text) and cut at the first stop string;
    with ``answer_from``, only the text after those ids' first ``answer_from`` is cut."""
    if s.token_ids is None or tok is None:
        return cut_at_stop(s.text or "", until)
    whole = tok.decode(s.token_ids)
    if s.answer_from is None:
        return cut_at_stop(whole, until)
    head = tok.decode(s.token_ids[: s.answer_from])
    tail = whole[len(head) :] if whole.startswith(head) else tok.decode(s.token_ids[s.answer_from :])
    return head + cut_at_stop(tail, until)


def reasoning_tokens(s: GeneratedText, text: str, fmt: Reasoning | None, tok: Decoder | None) -> int | None:
    """How many of the sample's generated tokens lie before the reasoning's end in ``text`` (its response):
    up to the end of ``text`` for a block that never closed; None without ``fmt``, token ids or a reasoning block."""
    if fmt is None or s.token_ids is None or tok is None:
        return None
    pos = reasoning_end(text, fmt)
    if pos is None:
        return None
    ids = s.token_ids
    lo, hi = 0, len(ids)  # the most leading tokens whose text ends at or before ``pos``
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(tok.decode(ids[:mid])) <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo
