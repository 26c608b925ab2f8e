"""``gc_paused()``: run a block with Python's cyclic garbage collector off.

For phases that allocate millions of long-lived or acyclic objects and free no cycles (a compile's docs,
records and token id lists; an inference engine's start-up): reference counting frees what they drop, and
the collector's passes over the young objects cost time and find nothing. The collector is switched back
on afterwards only if it was on before, so nesting and callers that turned it off themselves are safe."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
