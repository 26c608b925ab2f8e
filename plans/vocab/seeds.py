"""``run.seed``: lm-eval 0.4.13's ``--seed``, one rule for the stages that act on it.

lm-eval takes one integer (used for all four slots) or ``python,numpy,torch,fewshot`` (3 or 4 entries, each an
integer or None; a missing fourth is 1234). ``simple_evaluate`` seeds Python's ``random`` (slot 1) and numpy's
global generator (slot 2) before it loads any task, and gives slot 4 to the few-shot sampler. The compiler acts
on the seeds while documents are processed and prompts rendered (``compiler/build/seeds.py``); the scorer while
a task's scoring code runs (``scorer/usercode/globalrandom.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_SEED = 1234  # lm-eval's default for the numpy, torch and few-shot slots (and lmeval's run.seed)
NUMPY_MAX = 2**32 - 1  # numpy's legacy global generator takes seeds in [0, 2**32)
SEED_FORMS = "an integer, or python,numpy,torch[,fewshot] seeds (integers or None) as lm-eval's --seed"


@dataclass(frozen=True)
class Seeds:
    python: int | None
    numpy: int | None
    torch: int | None
    fewshot: int | None


def _slot(item: Any) -> int | None:
    if item is None or (isinstance(item, str) and item.strip().lower() in ("none", "null")):
        return None
    if isinstance(item, str):
        try:
            return int(item.strip())
        except ValueError:
            pass
    elif isinstance(item, int) and not isinstance(item, bool):
        return item
    raise ValueError(item)


def seed_slots(value: Any) -> Seeds:
    """``run.seed`` as lm-eval's ``--seed``: an integer (all four slots), or 3 or 4 of integer-or-None as a
    list or a comma-separated string. Null seeds no global generator and leaves the few-shot seed at its
    default. A ValueError whose message says what is wrong otherwise."""
    if value is None:
        return Seeds(None, None, None, DEFAULT_SEED)
    slots: list[int | None]
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            slots = [value] * 4
        elif isinstance(value, str | list):
            items = value.split(",") if isinstance(value, str) else value
            slots = [_slot(x) for x in items]
            if len(slots) == 1:
                slots = slots * 4
            elif len(slots) == 3:
                slots.append(DEFAULT_SEED)
            elif len(slots) != 4:
                raise ValueError(value)
        else:
            raise ValueError(value)
    except ValueError:
        raise ValueError(f"must be {SEED_FORMS}, got {value!r}") from None
    if slots[1] is not None and not 0 <= slots[1] <= NUMPY_MAX:
        raise ValueError(f"the numpy seed must be between 0 and 2**32 - 1, got {slots[1]}")
    return Seeds(*slots)
