"""The documents of one task on two plans, joined by ``doc_id``: each side's record maps grouped per document
(``doc_groups``), then merge-joined (``join_sorted``, one document of each side in memory at a time) or, for
sides not in doc_id order, joined through a dict of the old side (``join_dict``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from lmeval.plans import PlanError, PlanReader


class DocGroup(NamedTuple):
    """One document of a plan as record maps."""

    doc_id: int
    doc: dict[str, Any]  # the doc record
    instances: dict[int, dict[str, Any]]  # idx -> instance record


def doc_groups(plan: PlanReader, task: str) -> Iterator[DocGroup]:
    """``DocGroup(doc_id, doc record, {idx: instance record})`` per document, in plan order."""
    doc: dict[str, Any] | None = None
    insts: dict[int, dict[str, Any]] = {}
    for rec in plan.record_maps(task):
        if rec["kind"] == "doc":
            if doc is not None:
                yield DocGroup(doc["doc_id"], doc, insts)
            doc, insts = rec, {}
            if not isinstance(doc.get("doc_id"), int):
                raise PlanError(f"{plan.path}: task {task!r}: doc record without an integer doc_id")
        else:
            if doc is None or rec.get("doc_id") != doc["doc_id"]:
                raise PlanError(
                    f"{plan.path}: task {task!r}: instance {rec.get('instance_id')!r} (doc {rec.get('doc_id')!r}) "
                    f"does not follow its doc record"
                )
            idx = rec.get("idx")
            if not isinstance(idx, int) or idx in insts:
                raise PlanError(
                    f"{plan.path}: task {task!r} doc {doc['doc_id']}: missing or repeated instance idx {idx!r}"
                )
            insts[idx] = rec
    if doc is not None:
        yield DocGroup(doc["doc_id"], doc, insts)


class Unordered(Exception):
    pass


def join_sorted(
    old: Iterator[DocGroup], new: Iterator[DocGroup]
) -> Iterator[tuple[int, DocGroup | None, DocGroup | None]]:
    """Merge-join two doc streams by ascending doc_id: (doc_id, old group or None, new group or None).

    Raises ``Unordered`` when either side is not in ascending doc_id order (the caller then re-joins by dict).
    """
    o = next(old, None)
    n = next(new, None)
    last_o = last_n = None
    while o is not None or n is not None:
        if (o is not None and last_o is not None and o.doc_id <= last_o) or (
            n is not None and last_n is not None and n.doc_id <= last_n
        ):
            raise Unordered
        if n is None or (o is not None and o.doc_id < n.doc_id):
            assert o is not None
            yield o.doc_id, o, None
            last_o = o.doc_id
            o = next(old, None)
        elif o is None or n.doc_id < o.doc_id:
            yield n.doc_id, None, n
            last_n = n.doc_id
            n = next(new, None)
        else:
            yield o.doc_id, o, n
            last_o, last_n = o.doc_id, n.doc_id
            o, n = next(old, None), next(new, None)


def join_dict(
    old: Iterator[DocGroup], new: Iterator[DocGroup]
) -> Iterator[tuple[int, DocGroup | None, DocGroup | None]]:
    """Join docs in any order: the old side of this one task is held in memory."""
    rest = {g.doc_id: g for g in old}
    for n in new:
        yield n.doc_id, rest.pop(n.doc_id, None), n
    for doc_id, g in rest.items():
        yield doc_id, g, None
