"""``run.subsample``: an honest subset of each task's documents, the rule both stages share.

The compiler chooses the documents (``choose``) and records what it chose in the task's config
(``Drawn.to_dict``, key ``subsample``); the scorer reads that record back (``Drawn.from_dict``) to weigh
each stratum and report the estimator's interval (``scorer/statistics/subsample.py``).

The scheme is ``random``: a simple random sample without replacement, stratified by a document field
(``strata``, e.g. the field a clustered standard error clusters on) with proportional allocation. The order
is a function of the seed, the task name and the document id only (sha256, never Python's ``hash`` or a dict's
order), so every machine chooses the same ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

SCHEMES = ("random",)
SUBSAMPLE_SEED = 1234
SUBSAMPLE_KEY = "subsample"  # the task config's key, and the run option's name (run.subsample)


class SubsampleError(ValueError):
    """A bad ``run.subsample`` value (the message names the field)."""


@dataclass(frozen=True)
class Subsample:
    """What ``run.subsample`` asks: ``n`` documents per task (an int) or a fraction of them (0 < n < 1)."""

    n: int | float
    seed: int = SUBSAMPLE_SEED
    strata: str | None = None  # a document field; None: one stratum
    scheme: str = "random"

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "scheme": self.scheme, "seed": self.seed, "strata": self.strata}

    def size(self, population: int) -> int:
        """How many of ``population`` documents the subset holds (at least 1, at most all)."""
        if isinstance(self.n, float):
            want = int(-(-population * self.n // 1))  # ceil, as run.limit's fraction
        else:
            want = self.n
        return max(1, min(population, want))


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_subsample(raw: Any) -> Subsample | None:
    """``run.subsample``: N, a fraction, or ``{n, seed, strata, scheme}``; None/0 is none."""
    if raw is None or raw == 0 or raw == {}:
        return None
    body = raw if isinstance(raw, dict) else {"n": raw}
    for key in body:
        if key not in ("n", "seed", "strata", "scheme"):
            raise SubsampleError(f"field run.subsample.{key}: unknown (expected n, seed, strata, scheme)")
    n: Any = body.get("n")
    if not ((_int(n) and n > 0) or (isinstance(n, float) and 0.0 < n < 1.0)):
        raise SubsampleError(f"field run.subsample.n: must be a positive integer or a fraction in (0, 1), got {n!r}")
    seed: Any = body.get("seed", SUBSAMPLE_SEED)
    if not _int(seed) or not 0 <= seed < 2**63:
        raise SubsampleError(f"field run.subsample.seed: must be a non-negative integer, got {seed!r}")
    strata = body.get("strata")
    if strata is not None and not (isinstance(strata, str) and strata):
        raise SubsampleError(f"field run.subsample.strata: must be a document field name, got {strata!r}")
    scheme = body.get("scheme", "random")
    if scheme not in SCHEMES:
        raise SubsampleError(f"field run.subsample.scheme: must be one of {', '.join(SCHEMES)}, got {scheme!r}")
    return Subsample(n, seed, strata, scheme)


def canonical_subsample(raw: Any) -> dict[str, Any] | None:
    """One spelling per meaning (``run.subsample=50`` and ``{n: 50, seed: 1234}`` compile to one plan)."""
    s = parse_subsample(raw)
    return None if s is None else s.to_dict()


@dataclass(frozen=True)
class Drawn:
    """What was chosen for one task: the setting, the population, each stratum's size and the ids."""

    setting: Subsample
    population: int
    strata_sizes: dict[str, int]  # stratum value (as a string) -> documents in the population
    doc_ids: list[int]  # sorted
    doc_strata: list[str]  # the stratum of each chosen id, in ``doc_ids`` order

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.setting.to_dict(),
            "population": self.population,
            "strata_sizes": dict(sorted(self.strata_sizes.items())),
            "doc_ids": list(self.doc_ids),
            "doc_strata": list(self.doc_strata),
        }

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Drawn:
        """The record of a plan's task config; ``SubsampleError`` naming ``where`` when it is malformed."""
        try:
            setting = parse_subsample({k: d[k] for k in ("n", "seed", "strata", "scheme")})
            ids, strata, sizes = d["doc_ids"], d["doc_strata"], d["strata_sizes"]
            ok = (
                setting is not None
                and _int(d["population"])
                and isinstance(ids, list)
                and all(_int(i) for i in ids)
                and isinstance(strata, list)
                and len(strata) == len(ids)
                and all(isinstance(s, str) for s in strata)
                and isinstance(sizes, dict)
                and all(isinstance(k, str) and _int(v) and v > 0 for k, v in sizes.items())
                and set(strata) <= set(sizes)
            )
        except (KeyError, TypeError, SubsampleError):
            ok = False
        if not ok:
            raise SubsampleError(f"{where}: field subsample: not a subsample record")
        assert setting is not None
        return cls(setting, int(d["population"]), dict(sizes), list(ids), list(strata))


def order_key(seed: int, task: str, doc_id: int) -> bytes:
    """A document's place in the seeded random order (sha256: the same on every machine)."""
    return hashlib.sha256(f"lmeval-subsample\0{seed}\0{task}\0{doc_id}".encode()).digest()


def stratum_of(value: Any) -> str:
    """A stratum's name: the field's value as a string (``None`` and missing fields are ``""``)."""
    return "" if value is None else str(value)


def allocate(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Proportional allocation of ``total`` over strata of ``sizes`` (largest remainder, ties by name), at
    least one document per stratum while ``total`` allows."""
    pop = sum(sizes.values())
    names = sorted(sizes)
    if total >= pop:
        return dict(sizes)
    exact = {s: total * sizes[s] / pop for s in names}
    got = {s: min(sizes[s], int(exact[s])) for s in names}
    if total >= len(names):
        for s in names:
            got[s] = max(got[s], 1)
    left = total - sum(got.values())
    by_rest = sorted(names, key=lambda s: (-(exact[s] - int(exact[s])), s))
    while left > 0:
        for s in by_rest:
            if left and got[s] < sizes[s]:
                got[s] += 1
                left -= 1
    while left < 0:  # the one-per-stratum floor overshot: take back from the largest
        for s in sorted(names, key=lambda s: (-got[s], s)):
            if left and got[s] > 1:
                got[s] -= 1
                left += 1
    return got


def choose(task: str, strata: list[str], setting: Subsample) -> Drawn:
    """The subset of a task's documents ``0..len(strata)-1`` (``strata[i]``: document i's stratum)."""
    sizes: dict[str, int] = {}
    members: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        sizes[s] = sizes.get(s, 0) + 1
        members.setdefault(s, []).append(i)
    quota = allocate(sizes, setting.size(len(strata)))
    chosen: list[int] = []
    for s in sorted(members):
        ranked = sorted(members[s], key=lambda i: order_key(setting.seed, task, i))
        chosen += ranked[: quota[s]]
    chosen.sort()
    return Drawn(setting, len(strata), sizes, chosen, [strata[i] for i in chosen])
