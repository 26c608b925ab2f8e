"""The lm-eval side of an end-to-end comparison computed while our side runs (CI time).

Both sides are child processes that spend most of their time on one core (imports, task and request
building, the tiny model's small matmuls, scoring), so on a 2-core machine the lm-eval reference, started
in a background thread, runs beside ``lmeval run`` instead of before it. Nothing is shared between the two:
each writes its own files, and the results are the same as run one after the other.
``LMEVAL_E2E_SERIAL=1`` runs the reference in the foreground first (for timing the two apart).

A torch child that runs beside another gets one OpenMP thread (``beside_env``): two processes each with a
thread per core oversubscribe two cores, and PyTorch's spinning threads then slow both several times over
(our hf backend's SmolLM2 generation: 139 s with two threads beside a busy core, 33.5 s with one, the same
tokens). vLLM's CPU engine pins its own threads and is slower with one (58 s against 33 s), so its runs
keep the default and go when the reference is done.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def serial() -> bool:
    return os.environ.get("LMEVAL_E2E_SERIAL") == "1"


def beside_env() -> dict[str, str]:
    """The environment additions of a torch (hf) child that runs beside another one: one OpenMP thread."""
    return {} if serial() else {"OMP_NUM_THREADS": "1"}


def in_background(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """``fn(*args, **kwargs)`` started now in its own thread; ``.result()`` waits for it (and re-raises)."""
    if serial():
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
