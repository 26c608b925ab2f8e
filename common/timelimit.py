"""A real-time limit on a block of code: ``deadline(seconds, what, error)`` raises ``error("WHAT ran longer than
the limit of N s")`` inside the block once it has run ``seconds``. Python's own loops and its ``re`` engine
check for signals as they run, so this bounds a template rendering or a regular expression's backtracking.

A ``SIGALRM`` timer, so in the main thread only (where signals are delivered): elsewhere the block runs
unbounded. Nested deadlines keep the outer one's remaining time (an outer one that comes first stays in charge)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def deadline(seconds: float, what: str, error: Callable[[str], BaseException]) -> Iterator[None]:
    """The block, stopped by ``error(message)`` raised in it when it runs longer than ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_remaining, _ = signal.getitimer(signal.ITIMER_REAL)
    if old_remaining and old_remaining < seconds:  # an outer deadline comes first: leave it in charge
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise error(f"{what} ran longer than the limit of {seconds:g} s")

    old = signal.signal(signal.SIGALRM, expire)
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if old_remaining:
            left = old_remaining - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
