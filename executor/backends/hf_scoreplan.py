"""Which forward passes the ``hf`` backend runs to score a phase's requests: pure planning on token ids.

A request scores ``ids[ctxlen:]``; the logits it reads are rows ``ctxlen - 1 .. len(ids) - 2`` of a causal
forward over ``ids[:-1]``. Row ``p`` depends only on tokens ``0..p``, so a request whose ``ids[:-1]`` is a
prefix of another forward's input reads its rows from that forward (``cover``): the four one-token choices
of an MMLU question share one forward of the question, and a continuation that extends another one of the
same context is read from the longer one. Forwards whose inputs share a long leading run (the few-shot
examples every document of a subject repeats) form a ``PrefixGroup``: the shared prefix runs once, its keys
and values are reused for every member's remaining tokens (``prefix_groups``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lmeval.executor.efficiency import common_prefix
from lmeval.executor.requests import ScoreInput

MIN_PREFIX = 64  # shared tokens worth a prefix pass of their own


@dataclass
class Forward:
    """One forward input and the requests read from it; ``first_row``: the earliest logits row any of them
    needs (rows before it are never read)."""

    ids: list[int]
    members: list[int] = field(default_factory=list)
    first_row: int = 0


@dataclass
class PrefixGroup:
    """Forwards that run ``ids[:prefix]`` once and then their own ``ids[prefix:]`` (``prefix`` 0: plain)."""

    prefix: int
    forwards: list[Forward]


def cover(inputs: Sequence[ScoreInput]) -> list[Forward]:
    """The fewest forwards that hold every input's rows, in lexicographic order of their ids: in that
    order a sequence that is a prefix of another sits just before the ones it is a prefix of, so one pass
    from the end keeps each sequence that is not a prefix of the one kept after it."""
    keyed = sorted(range(len(inputs)), key=lambda i: inputs[i].ids[:-1])
    out: list[Forward] = []
    for i in reversed(keyed):
        x = inputs[i]
        seq = x.ids[:-1]
        cur = out[-1] if out else None
        if cur is None or len(seq) > len(cur.ids) or cur.ids[: len(seq)] != seq:
            cur = Forward(seq, [], x.ctxlen - 1)
            out.append(cur)
        cur.members.append(i)
        cur.first_row = min(cur.first_row, x.ctxlen - 1)
    out.reverse()
    return out


def common_prefix_all(seqs: Sequence[list[int]]) -> int:
    """How many leading tokens all of ``seqs`` share."""
    if not seqs:
        return 0
    lo, hi = min(seqs), max(seqs)  # lexicographic extremes: what they share, all share
    return common_prefix(lo, hi)


def prefix_groups(forwards: Sequence[Forward], min_prefix: int = MIN_PREFIX) -> list[PrefixGroup]:
    """Runs of neighbouring forwards (lexicographic order) that share at least ``min_prefix`` leading
    tokens; a run's prefix is what all its members share, never past a member's ``first_row`` (each row a
    member reads comes from its own part) and never under half of what its first two members share (a
    member that shares little starts a run of its own). A forward sharing nothing worth it: prefix 0."""
    groups: list[PrefixGroup] = []
    run: list[Forward] = []
    shared = first = 0

    def flush() -> None:
        if len(run) > 1:
            groups.append(PrefixGroup(shared, list(run)))
        else:
            groups.extend(PrefixGroup(0, [f]) for f in run)

    for f in forwards:
        if run:
            p = min(shared, common_prefix(run[0].ids, f.ids), f.first_row)
            if p >= min_prefix and (len(run) == 1 or p * 2 >= first):
                first = p if len(run) == 1 else first
                run.append(f)
                shared = p
                continue
            flush()
        run, shared = [f], f.first_row
    flush()
    return groups


def batches(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` (already in running order) cut into consecutive batches of at most
    ``max_rows`` rows whose padded size (rows x longest) stays within ``max_tokens`` (a longer row alone)."""
    out: list[list[int]] = []
    cur: list[int] = []
    width = 0
    for i, n in enumerate(lengths):
        w = max(width, n)
        if cur and (len(cur) >= max_rows or w * (len(cur) + 1) > max_tokens):
            out.append(cur)
            cur, w = [], n
        cur.append(i)
        width = w
    if cur:
        out.append(cur)
    return out
