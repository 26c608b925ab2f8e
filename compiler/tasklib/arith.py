"""``arith``: deterministic arithmetic problems generated from a fixed seed (no data files).

The embedded default task: it needs no download, so ``lmeval compile +task=arith`` works anywhere.
"""

from __future__ import annotations

import random
from typing import Any

OPS = ("+", "-", "*")


def _problem(rnd: random.Random, i: int, split: str) -> dict[str, Any]:
    op = OPS[rnd.randrange(len(OPS))]
    if op == "*":
        a, b = rnd.randint(2, 19), rnd.randint(2, 19)
    else:
        a, b = rnd.randint(1, 99), rnd.randint(1, 99)
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return {"id": f"{split}-{i}", "a": a, "op": op, "b": b, "answer": str(answer)}


def dataset(n_train: int = 50, n_test: int = 200, seed: int = 1234, **_: Any) -> dict[str, list[dict[str, Any]]]:
    """``{"train": [...], "test": [...]}``: the same problems on every machine for the same arguments."""
    out = {}
    for split, n, offset in (("train", n_train, 0), ("test", n_test, 1)):
        rnd = random.Random(f"lmeval-arith-{seed}-{offset}")
        out[split] = [_problem(rnd, i, split) for i in range(int(n))]
    return out
