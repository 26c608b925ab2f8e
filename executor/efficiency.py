"""How far a run is from the limit: each distinct token position of its requests computed once.

A request's tokens are positions of a prefix tree: two requests that share their first k tokens share k
positions (their keys and values, their logits), however the engine gets there. The limit of a set of
requests is the number of nodes of that tree, plus the tokens generated (each one a forward of its own).
``distinct_positions`` counts the nodes without building the tree: sorted, a sequence adds the tokens past
its longest common prefix with the one before it (the longest common prefix with any earlier sequence in
sorted order is with its neighbour).

The engine's side is its backend's ``cache_stats["computed_tokens"]``: prompt tokens it ran through the
model (not read from a cache; padding included where a backend pads) plus the tokens it generated.
``efficiency = distinct / computed``: 1.0 is the limit, below it the share of work that was not needed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


def distinct_positions(seqs: Sequence[Sequence[int]]) -> int:
    """Nodes of the prefix tree of ``seqs``: the token positions a perfect prefix cache computes once."""
    ordered = sorted(tuple(s) for s in seqs)
    total = 0
    prev: tuple[int, ...] = ()
    for s in ordered:
        total += len(s) - common_prefix(prev, s)
        prev = s
    return total


def efficiency(distinct: int, computed: int) -> float | None:
    """``distinct / computed`` (1.0: the limit); None when nothing was computed."""
    return distinct / computed if computed > 0 else None
