"""The lm-eval side of an end-to-end comparison computed while our side runs (CI time).

Both sides are child processes that spend most of their time on one core (imports, task and request
building, the tiny model's small matmuls, scoring), so on a 2-core machine the lm-eval reference, started
in a background thread, runs beside ``lmeval run`` instead of before it. Nothing is shared between the two:
each writes its own files, and the results are the same as run one after the other.
``LMEVAL_E2E_SERIAL=1`` runs the reference in the foreground first (for timing the two apart).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def in_background(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """``fn(*args, **kwargs)`` started now in its own thread; ``.result()`` waits for it (and re-raises)."""
    if os.environ.get("LMEVAL_E2E_SERIAL") == "1":
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to .result(), as a thread's would be
            done.set_exception(e)
        return done
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lmeval-e2e-ref")
    fut = pool.submit(fn, *args, **kwargs)
    pool.shutdown(wait=False)
    return fut
