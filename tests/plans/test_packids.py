"""``plans.packids.IdsPacker`` packs every id list as ``msgpack.packb`` does, whatever the lists in a row share."""

from __future__ import annotations

import random

import msgpack
import pytest

from lmeval.plans.plan.packids import MIN_SHARED, IdsPacker, _common


def test_lists_in_a_row_pack_as_msgpack_does() -> None:
    """Starts shared, partly shared, grown, shrunk and not shared; ids of every packed width (fixint, uint8,
    uint16, uint32) and array headers of every width (fixarray, array16, array32)."""
    rnd = random.Random(50)
    widths = [lambda: rnd.randrange(128), lambda: rnd.randrange(128, 256), lambda: rnd.randrange(256, 1 << 16),
              lambda: rnd.randrange(1 << 16, 1 << 32)]  # fmt: skip

    def ids(n: int) -> list[int]:
        return [rnd.choice(widths)() for _ in range(n)]

    heads = [ids(rnd.choice([0, 5, MIN_SHARED - 1, MIN_SHARED, 200, 1200])) for _ in range(6)]
    packer = IdsPacker()
    prev: list[int] = []
    for i in range(3000):
        r = rnd.random()
        if r < 0.1:
            cur = ids(rnd.randint(0, 40))
        elif r < 0.2:
            cur = prev[: rnd.randint(0, len(prev))]  # a start of the previous list
        elif r < 0.3:
            cur = prev + ids(rnd.randint(0, 20))
        else:
            cur = rnd.choice(heads) + ids(rnd.choice([0, 1, 14, 15, 16, 300]))
        assert packer.pack(cur) == msgpack.packb(cur), i
        prev = cur
    long = heads[-1] + ids(70_000)  # an array32 header
    assert packer.pack(long) == msgpack.packb(long)
    assert packer.pack(long[:-1]) == msgpack.packb(long[:-1])


@pytest.mark.parametrize(("a", "b", "n"), [([], [], 0), ([1, 2, 3], [1, 2, 4], 2), ([1, 2], [1, 2, 3], 2),
                                           ([5], [6], 0), (list(range(999)), list(range(999)), 999)])  # fmt: skip
def test_common_start(a: list[int], b: list[int], n: int) -> None:
    assert _common(a, b) == n == _common(b, a)
