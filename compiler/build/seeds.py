"""``run.seed`` and ``run.seed_mode``: lm-eval's ``--seed``, for the parts of it that act at compile time.

lm-eval 0.4.13 takes one integer (used for all four slots) or ``python,numpy,torch,fewshot`` (3 or 4
entries, each an integer or None; a missing fourth is 1234: ``plans.seed_slots``), and before building any
request seeds Python's ``random`` (slot 1) and numpy's global generator (slot 2), and gives slot 4 to the
few-shot sampler. A task's Python functions and Jinja's ``random`` filter draw from those generators while its
documents are processed and rendered (gpqa's ``process_docs`` shuffles the choices with ``random.shuffle``).
``run.seed_mode`` says how the draws are seeded:

- ``per_task`` (the default): before each task, Python's ``random`` and, for a task with Python functions,
  numpy's global generator are seeded, and put back as they were afterwards; each task is seeded afresh, so
  its prompts do not depend on which other tasks share the plan (each equals lm-eval's for that task run
  alone).
- ``lm_eval``: seeded once for the whole compile, as lm-eval's ``simple_evaluate`` does; the tasks draw from
  that one stream in lm-eval's load order (``Selection.load_order``): every task's documents are processed
  first (``TaskBuilder.prepare``, as lm-eval builds its Task objects), then every task's requests are rendered
  (``TaskBuilder.render``, as ``evaluate`` calls ``build_all_requests``). A task's prompts then depend on what
  else is in the plan, exactly as lm-eval's do.

The torch slot has no compile-time effect (the compiler runs no torch; it is recorded in the plan's config
with the rest). Slot 4 is the few-shot seed unless ``run.fewshot_random_seed`` sets a different one (see
``fewshot_seed``).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.tasks import FunctionRef
from lmeval.plans import DEFAULT_SEED as DEFAULT_SEED
from lmeval.plans import Seeds as Seeds
from lmeval.plans import seed_slots

SEED_MODES = ("per_task", "lm_eval")
DEFAULT_SEED_MODE = "per_task"  # recorded in the plan's config only when another mode is chosen


def parse_seed(value: Any) -> Seeds:
    """``run.seed`` as lm-eval's ``--seed`` (``plans.seed_slots``); a one-line CompileError naming the field."""
    try:
        return seed_slots(value)
    except ValueError as e:
        raise fail(str(e), field="run.seed") from None


def parse_seed_mode(value: Any) -> str:
    """``run.seed_mode``: ``per_task`` (the default, also for null) or ``lm_eval``."""
    if value is None:
        return DEFAULT_SEED_MODE
    if isinstance(value, str) and value in SEED_MODES:
        return value
    raise fail(f"must be one of {', '.join(SEED_MODES)}, got {value!r}", field="run.seed_mode")


def fewshot_seed(seeds: Seeds, fewshot_random_seed: int | None) -> int | None:
    """The few-shot sampler's seed: ``run.fewshot_random_seed`` and ``run.seed``'s few-shot slot agree, or
    one of them is left at the default (1234) and the other one counts; two different non-default values are
    refused rather than one silently ignored."""
    if seeds.fewshot == fewshot_random_seed or seeds.fewshot == DEFAULT_SEED:
        return fewshot_random_seed
    if fewshot_random_seed == DEFAULT_SEED:
        return seeds.fewshot
    raise fail(
        f"sets the few-shot seed to {seeds.fewshot} but run.fewshot_random_seed is {fewshot_random_seed}; "
        "set only one of them",
        field="run.seed",
    )


@contextlib.contextmanager
def seeded_globals(python: int | None, numpy: int | None, with_numpy: bool) -> Iterator[None]:
    """Seed Python's ``random`` (and numpy's global generator, ``with_numpy``) for a block; both are put
    back as they were afterwards. A None seed leaves that generator alone."""
    np: Any = None
    if numpy is not None and with_numpy:
        with contextlib.suppress(ImportError):
            import numpy as np
    py_state = random.getstate() if python is not None else None
    np_state = np.random.get_state() if np is not None else None
    try:
        if python is not None:
            random.seed(python)
        if np is not None:
            np.random.seed(numpy)
        yield
    finally:
        if py_state is not None:
            random.setstate(py_state)
        if np_state is not None:
            np.random.set_state(np_state)


def has_python(value: Any) -> bool:
    """Whether a task config value holds a Python function reference (``!function``) anywhere."""
    if isinstance(value, dict):
        return any(has_python(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_python(v) for v in value)
    return isinstance(value, FunctionRef)
