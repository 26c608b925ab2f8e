"""Thinking and answer budgets (``run.thinking_budget``, ``run.answer_budget``): the contract between the
compiler, which writes them into each generation's kwargs, and the executor, which enforces them.

A generation Instance of a plan compiled with a thinking budget carries, in its ``generation_kwargs``:

- ``reasoning_budget``: ``{thinking, answer, end, end_ids}``: at most ``thinking`` tokens of reasoning, then
  at most ``answer`` tokens after the end marker ``end``, whose token ids (the model's tokenizer, no special
  tokens) the compiler encoded: ``end_ids``. The executor never renders or encodes anything for it: it
  only concatenates token ids.
- ``max_gen_toks``: ``thinking + len(end_ids) + answer``, the most the request can generate in all (what
  left truncation of the prompt and engines that do not know the budget see).

Being in the generation kwargs, a budget is part of every request hash: budgets change what is generated,
so a run under one budget is never reused for another (``execute --reuse``). ``run.reasoning`` alone
stays scoring only; with a budget its first end marker is the forced one, so then it reaches requests too.

The executor (``executor/budgets.py``) runs such a request in two phases (budget forcing, as in s1):
phase 1 generates up to ``thinking`` tokens with ``end`` as the only stop string; when the model did not
write ``end`` within the budget, ``end_ids`` are appended (the block is *forced* closed); phase 2 continues
from prompt + phase-1 tokens (+ ``end_ids``) with up to ``answer`` tokens and the task's own stop strings,
which apply to the answer only. A phase 1 that ends on EOS without the marker ends the response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BUDGET_KEY = "reasoning_budget"  # the generation_kwargs key


@dataclass(frozen=True)
class ThinkingBudget:
    thinking: int  # tokens of reasoning at most (phase 1)
    answer: int  # tokens after the end marker at most (phase 2)
    end: str  # the end marker (``run.reasoning.end[0]``)
    end_ids: tuple[int, ...]  # its token ids, encoded by the compiler

    @property
    def total(self) -> int:
        return self.thinking + len(self.end_ids) + self.answer

    def to_dict(self) -> dict[str, Any]:
        return {"thinking": self.thinking, "answer": self.answer, "end": self.end, "end_ids": list(self.end_ids)}


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def read_budget(gen_kwargs: dict[str, Any] | None) -> ThinkingBudget | None:
    """The budget of one generation's kwargs (None: none); ``ValueError`` naming the bad field."""
    value = (gen_kwargs or {}).get(BUDGET_KEY)
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"thinking", "answer", "end", "end_ids"}:
        raise ValueError(f"generation_kwargs.{BUDGET_KEY}: must be a mapping of thinking, answer, end, end_ids")
    for k in ("thinking", "answer"):
        if not _count(value[k]):
            raise ValueError(f"generation_kwargs.{BUDGET_KEY}.{k}: must be a number of tokens >= 1, got {value[k]!r}")
    ids = value["end_ids"]
    if not (isinstance(ids, list) and ids and all(isinstance(i, int) and i >= 0 for i in ids)):
        raise ValueError(f"generation_kwargs.{BUDGET_KEY}.end_ids: must be a non-empty list of token ids")
    if not (isinstance(value["end"], str) and value["end"]):
        raise ValueError(f"generation_kwargs.{BUDGET_KEY}.end: must be a non-empty marker")
    return ThinkingBudget(value["thinking"], value["answer"], value["end"], tuple(ids))
