"""What an OpenAI-compatible server's answer must hold before the HTTP backends take it
(docs/reference/hostile-input.md, "API keys and HTTP answers").

Every check raises ``ValueError`` with one line; the backends ask once more and then fail the request with
``RequestFailed`` (the answers already received are written, a rerun resumes). An answer is taken only when:
its ``choices`` is a list of objects with distinct integer ``index`` 0..n-1, as many as the request asked for
(a greedy request: exactly one); each text is a string of valid Unicode (no lone surrogate, which no file can
store); token ids are integers from 0 to 2**32-1 (a negative or larger one indexes no vocabulary, and the
tokenizer decoding it overflows); and every log-likelihood is a finite number <= 0 (NaN, infinities and
positive values are not log-probabilities).
"""

from __future__ import annotations

import math
from typing import Any

from lmeval.plans import MAX_TOKEN_ID


def choices_of(resp: Any, n: int | None, what: str) -> list[dict[str, Any]]:
    """``resp["choices"]`` in index order, exactly ``n`` of them (None: any number), indexed 0..n-1."""
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"{what}: the answer has no choices")
    if not all(isinstance(c, dict) for c in choices):
        raise ValueError(f"{what}: a choice is not an object")
    index = [c.get("index") for c in choices]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in index):
        raise ValueError(f"{what}: a choice has no integer index")
    if n is not None and len(choices) != n:
        raise ValueError(f"{what}: {len(choices)} choices for n={n}")
    if sorted(index) != list(range(len(choices))):
        raise ValueError(f"{what}: the choices' indexes are not 0..{len(choices) - 1}")
    return sorted(choices, key=lambda c: int(c["index"]))


def text_of(value: Any, what: str, field: str) -> str:
    """A choice's text: a string (None: empty) that is valid Unicode."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what}: {field} is not text ({type(value).__name__})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what}: {field} holds a lone surrogate (not Unicode text)") from None
    return value


def finish_reason_of(c: dict[str, Any]) -> str:
    reason = c.get("finish_reason")
    return reason if isinstance(reason, str) and reason and len(reason) <= 64 else "stop"


def token_ids_of(value: Any, what: str) -> list[int] | None:
    """A choice's ``token_ids``: integers from 0 to ``MAX_TOKEN_ID`` (None: the server sent none)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        raise ValueError(f"{what}: token_ids is not a list of integers")
    bad = next((t for t in value if not 0 <= t <= MAX_TOKEN_ID), None)
    if bad is not None:
        raise ValueError(f"{what}: token_ids holds {str(bad)[:40]}, not a token id (0..{MAX_TOKEN_ID})")
    return list(value)


def logprob(value: Any, what: str, pos: int) -> float:
    """A token's log-probability: a finite number <= 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what}: the log-probability at position {pos} is not a number ({str(value)[:40]})")
    f = float(value)
    if not math.isfinite(f) or f > 0:
        raise ValueError(f"{what}: the log-probability at position {pos} is {f} (must be finite and <= 0)")
    return f


def score_logprobs(c: dict[str, Any], n_tokens: int, what: str) -> tuple[list[Any], list[Any]]:
    """A scoring choice's ``token_logprobs`` and ``top_logprobs``, each covering the ``n_tokens`` prompt tokens."""
    lp = c.get("logprobs")
    if not isinstance(lp, dict):
        raise ValueError(f"{what}: the choice has no logprobs")
    values, top = lp.get("token_logprobs"), lp.get("top_logprobs")
    for name, seq in (("token_logprobs", values), ("top_logprobs", top)):
        if not isinstance(seq, list) or len(seq) < n_tokens:
            got = f"{len(seq)} entries" if isinstance(seq, list) else type(seq).__name__
            raise ValueError(f"{what}: logprobs.{name} must list the {n_tokens} prompt tokens (got {got})")
    assert isinstance(values, list) and isinstance(top, list)
    return values, top


def best_token(top: Any, what: str, pos: int) -> str | None:
    """The most likely token of a ``top_logprobs`` entry (None for an empty one)."""
    if top is None:
        return None
    if not isinstance(top, dict):
        raise ValueError(f"{what}: top_logprobs at position {pos} is not an object")
    best: tuple[float, str] | None = None
    for tok, value in top.items():
        f = logprob(value, what, pos)
        if best is None or f > best[0]:
            best = (f, str(tok))
    return best[1] if best is not None else None
