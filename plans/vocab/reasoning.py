"""``run.reasoning``: how a reasoning model's response splits into its reasoning and its answer.

The one place of the split rule (the scorer applies it before a task's filters; samples.parquet and the
report show both parts). The setting is part of the plan's resolved config (``run.reasoning``), recorded only
when set, so a plan without it is the plan it was before the setting existed; it is scoring-only: no
request, prompt or request hash depends on it (``lmeval diff`` lists it under "scoring").

- ``end``: the end marker(s) of the reasoning block, e.g. ``['</think>']``; a list means any of them. The
  answer is the text after the *last* end marker found in the response (a model that thinks twice).
- ``start``: the start marker, or null where the chat template opens the block itself (Qwen3 and
  DeepSeek-R1 templates end the prompt with ``<think>``). With a start marker, a response that opens no
  block (no start marker before the first end marker, and no end marker) has no reasoning: all of it is
  the answer; the text before the start marker is kept in the answer.
- ``unclosed``: a response with a start marker (or, without ``start``, a block the template opened) but no
  end marker ran out of tokens while thinking: ``empty`` (the default) makes its answer empty, so it scores
  as a wrong answer; ``after_last`` takes the text after the last start marker, or the whole response
  without ``start``, as the answer (lm-eval's default of leaving such a response as it is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UNCLOSED = ("empty", "after_last")


class ReasoningError(ValueError):
    """A bad ``run.reasoning`` value; the message names the field."""


@dataclass(frozen=True)
class Reasoning:
    end: tuple[str, ...]
    start: str | None = None
    unclosed: str = "empty"

    def to_dict(self) -> dict[str, Any]:
        return {"end": list(self.end), "start": self.start, "unclosed": self.unclosed}


@dataclass(frozen=True)
class Split:
    """One response: its reasoning (None when it has no reasoning block) and its answer."""

    reasoning: str | None
    answer: str
    closed: bool = True  # False: the block never ended (the model ran out of tokens while thinking)


def parse_reasoning(value: Any, field: str = "run.reasoning") -> Reasoning | None:
    """``run.reasoning`` (a mapping, or null for none) as a ``Reasoning``; ``ReasoningError`` naming the field."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReasoningError(f"{field}: must be a mapping with end (and start, unclosed), got {value!r}")
    unknown = sorted(set(value) - {"end", "start", "unclosed"})
    if unknown:
        raise ReasoningError(f"{field}.{unknown[0]}: unknown key (known: end, start, unclosed)")
    end = value.get("end")
    if isinstance(end, str):
        end = [end]
    if not (isinstance(end, list) and end and all(isinstance(m, str) and m for m in end)):
        raise ReasoningError(f"{field}.end: must be a non-empty marker or list of them, got {end!r}")
    start = value.get("start")
    if start is not None and not (isinstance(start, str) and start):
        raise ReasoningError(f"{field}.start: must be a non-empty marker or null, got {start!r}")
    unclosed = value.get("unclosed", "empty")
    if unclosed is None:
        unclosed = "empty"
    if unclosed not in UNCLOSED:
        raise ReasoningError(f"{field}.unclosed: must be one of {', '.join(UNCLOSED)}, got {unclosed!r}")
    return Reasoning(tuple(end), start, unclosed)


def canonical_reasoning(value: Any) -> dict[str, Any]:
    """``run.reasoning`` as the plan records it: ``end`` a list, ``unclosed`` spelled out, ``start`` only when
    set (``end: </think>`` and ``end: [</think>]`` are one plan)."""
    fmt = parse_reasoning(value)
    assert fmt is not None
    out = fmt.to_dict()
    if out["start"] is None:
        del out["start"]
    return out


def _last_end(text: str, markers: tuple[str, ...]) -> tuple[int, int] | None:
    """(position, length) of the end marker that ends last in ``text`` (the longest at a tie)."""
    best: tuple[int, int] | None = None
    for m in markers:
        i = text.rfind(m)
        if i >= 0 and (best is None or i + len(m) > best[0] + best[1]):
            best = (i, len(m))
    return best


def split_response(text: str, fmt: Reasoning) -> Split:
    """``text`` as (reasoning, answer) under ``fmt``; the answer keeps its whitespace (filters strip)."""
    end = _last_end(text, fmt.end)
    if fmt.start is None:
        if end is not None:
            return Split(text[: end[0]], text[end[0] + end[1] :])
        # the template opened the block: no end marker means the model never stopped thinking
        return Split(text, "" if fmt.unclosed == "empty" else text, closed=False)
    s = text.find(fmt.start)
    if end is not None:
        if 0 <= s < end[0]:
            return Split(text[s + len(fmt.start) : end[0]], text[:s] + text[end[0] + end[1] :])
        return Split(text[: end[0]], text[end[0] + end[1] :])  # a block opened by the prompt
    if s < 0:
        return Split(None, text)  # no block at all: the whole response answers
    last = text.rfind(fmt.start)
    reasoning = text[s + len(fmt.start) :]
    answer = "" if fmt.unclosed == "empty" else text[last + len(fmt.start) :]
    return Split(reasoning, text[:s] + answer, closed=False)


def reasoning_end(text: str, fmt: Reasoning) -> int | None:
    """Where in ``text`` the reasoning ends under ``fmt`` (the offset of the end marker that closes it, or
    ``len(text)`` for a block that never closed); None when the response has no reasoning block. What the
    executor counts a response's reasoning tokens up to (``reasoning_tokens``)."""
    split = split_response(text, fmt)
    if split.reasoning is None:
        return None
    if not split.closed:
        return len(text)
    end = _last_end(text, fmt.end)
    assert end is not None
    return end[0]
