"""Crash injection for the kill-and-resume tests: ``LMEVAL_EXECUTOR_FAULT=POINT:N`` SIGKILLs the process
the N-th time it reaches ``POINT`` (``manifest``, ``part-tmp`` after a part's temporary file is written,
``part`` after it is renamed into place). Unset, it does nothing."""

from __future__ import annotations

import os
import signal

_counts: dict[str, int] = {}


def point(name: str) -> None:
    spec = os.environ.get("LMEVAL_EXECUTOR_FAULT")
    if not spec:
        return
    want, _, n = spec.partition(":")
    if want != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == int(n or 1):
        os.kill(os.getpid(), signal.SIGKILL)
