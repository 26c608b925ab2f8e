"""Python's global ``random`` (and numpy's) as lm-eval 0.4.13 leaves them when a task's scoring code runs.

A task's Python scoring code may draw from the global generators: MMMU's ``process_results`` picks an option
with ``random.choice`` when a reply names none (its ``utils.py`` calls ``random.seed(42)`` when it is
imported); pisa's does the same without seeding. lm-eval's value for such a document depends on the state the
draw finds, which lm-eval sets up in this order for ``lm_eval --tasks TASK`` (the task run alone, one
process):

1. ``simple_evaluate`` seeds ``random`` with ``--seed``'s first slot (0 by lm-eval's CLI default; lmeval's
   ``run.seed``, recorded in the plan) and numpy's global generator with the second, before any task loads;
2. loading the task executes its Python module once per process (MMMU's reseeds ``random`` to 42);
3. its ``ConfigurableTask.task_name`` property draws eight characters from ``random`` on every access
   (``getattr(self.config, "task", random_task_id())`` evaluates the default first): ``TaskManager.load``
   reads it once to collect the task and twice to check duplicates, three draws before any document scores;
4. the filters run, then ``process_results`` once per document in document order, drawing as they go.

``lm_eval_random`` reproduces that around the scoring of one task: it seeds the generators from the plan's
``run.seed``, has the task's scoring modules execute afresh (``forget_scoring_modules``: the next ``load_ref``
runs the module's top level, as the new process's first import does), and ``task_loaded`` makes the three
draws once they are loaded. Both generators are put back as they were afterwards, so a task's values depend on nothing
else in the plan (a task scored as lm-eval scores it run alone, whichever ``run.seed_mode`` the plan has).
"""

from __future__ import annotations

import contextlib
import random
import string
from collections.abc import Iterator
from typing import Any

from lmeval.plans import DEFAULT_SEED, seed_slots
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.usercode.refs import forget_scoring_modules

TASK_NAME_DRAWS = 3  # TaskManager.load reads task_name: collect (1), _check_duplicates (2)
_TASK_ID_ALPHABET = string.ascii_lowercase + string.digits  # lm-eval's random_task_id: 8 of these
_TASK_ID_LENGTH = 8


@contextlib.contextmanager
def lm_eval_random(run: dict[str, Any], where: str) -> Iterator[None]:
    """Seed the global generators as lm-eval's ``simple_evaluate`` does from the plan's ``run`` config
    (``run.seed``; a slot that is None leaves its generator as it is) and forget the loaded scoring modules;
    both generators are restored on exit. A malformed recorded seed is a one-line ScoreError."""
    try:
        seeds = seed_slots(run.get("seed", DEFAULT_SEED))
    except ValueError as e:
        raise ScoreError(f"{where}: the plan's run.seed {e}") from None
    np: Any = None
    if seeds.numpy is not None:
        with contextlib.suppress(ImportError):
            import numpy as np
    py_state = random.getstate()
    np_state = np.random.get_state() if np is not None else None
    try:
        if seeds.python is not None:
            random.seed(seeds.python)
        if np is not None:
            np.random.seed(seeds.numpy)
        forget_scoring_modules()
        yield
    finally:
        random.setstate(py_state)
        if np_state is not None:
            np.random.set_state(np_state)


def task_loaded() -> None:
    """The draws lm-eval makes from ``random`` between loading a task run alone and scoring its first
    document: ``task_name`` read three times, each read drawing a random 8-character id."""
    for _ in range(TASK_NAME_DRAWS):
        random.choices(_TASK_ID_ALPHABET, k=_TASK_ID_LENGTH)
