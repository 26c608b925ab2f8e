"""The limit a run is measured against: distinct token positions of its requests (executor/efficiency.py)."""

from __future__ import annotations

import random

from lmeval.executor.efficiency import common_prefix, distinct_positions, efficiency


def prefixes(seqs: list[list[int]]) -> int:
    """The prefix tree's nodes, counted the slow way: every distinct non-empty prefix."""
    return len({tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)})


def test_distinct_positions_count_shared_prefixes_once() -> None:
    few_shot = [5, 6, 7, 8]
    mmlu_like = [[*few_shot, 9, 10, c] for c in (1, 2, 3, 4)] + [[*few_shot, 11, c] for c in (1, 2, 3, 4)]
    assert distinct_positions(mmlu_like) == 4 + 2 + 4 + 1 + 4 == prefixes(mmlu_like)
    assert distinct_positions([[1, 2], [1, 2], [1, 2, 3], [1], []]) == 3
    assert distinct_positions([]) == 0


def test_distinct_positions_equal_the_prefix_tree_on_random_sets() -> None:
    rng = random.Random(7)
    for _ in range(200):
        stems = [[rng.randrange(4) for _ in range(rng.randrange(6))] for _ in range(3)]
        seqs = [rng.choice(stems) + [rng.randrange(3) for _ in range(rng.randrange(4))] for _ in range(8)]
        assert distinct_positions(seqs) == prefixes(seqs), seqs


def test_common_prefix_and_ratio() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
    assert efficiency(80, 100) == 0.8
    assert efficiency(5, 0) is None
