"""One plan record and its stored form: the map stored per record (an Instance sharing its doc's context stores
it once, see ``record_map``), its canonical bytes (``encode_instance``/``encode_doc``, fast paths equal to
``canonical_bytes`` of the map), and back: raw maps restored and checked (``record_maps``), then typed records
(``decode_record``). Files, frames and hashes are elsewhere (``plans/plan/io.py``, ``plans/plan/storage.py``,
``plans/plan/integrity.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any

import msgpack

from lmeval.plans.errors import PlanError
from lmeval.plans.plan.canonical import canonical_bytes, normalize, pack_normalized
from lmeval.plans.plan.packids import IdsPacker
from lmeval.plans.plan.records import DocRecord, InstanceRecord, instance_id_for

Record = DocRecord | InstanceRecord

SHARED_CONTEXT = "shared_context"


def record_map(rec: Record, prev: InstanceRecord | None) -> dict[str, Any]:
    """The map stored for a record. An Instance whose context and context ids equal those of the Instance
    just before it (same task and doc: the choices of a multiple-choice doc) stores neither and carries
    ``shared_context: true`` instead; readers restore them (``expand_record``)."""
    d = rec.to_dict()
    if (
        isinstance(rec, InstanceRecord)
        and prev is not None
        and prev.doc_id == rec.doc_id
        and prev.task == rec.task
        and prev.context == rec.context
        and prev.context_ids == rec.context_ids
    ):
        del d["context"], d["context_ids"]
        d[SHARED_CONTEXT] = True
    return d


def expand_record(obj: dict[str, Any], prev_instance: dict[str, Any] | None) -> dict[str, Any]:
    """Undo ``record_map``'s context sharing on a raw record map (``prev_instance``: the previous raw
    instance map of the stream, already expanded). Raises PlanError-worthy ValueError when it cannot."""
    if obj.get(SHARED_CONTEXT) is True:
        if (
            prev_instance is None
            or prev_instance.get("doc_id") != obj.get("doc_id")
            or prev_instance.get("task") != obj.get("task")
        ):
            raise ValueError("shared-context instance without a preceding instance of the same doc")
        obj = dict(obj)
        del obj[SHARED_CONTEXT]
        obj["context"] = prev_instance["context"]
        obj["context_ids"] = prev_instance["context_ids"]
    return obj


def _ints(ids: list[int] | None) -> list[int] | None:
    if ids is None or set(map(type, ids)) <= {int}:
        return ids
    return normalize(ids)  # type: ignore[no-any-return]


def encode_instance(rec: InstanceRecord, prev: InstanceRecord | None) -> bytes:
    """``canonical_bytes(record_map(rec, prev))`` without the generic walk: the keys in sorted order."""
    shared = (
        prev is not None
        and prev.doc_id == rec.doc_id
        and prev.task == rec.task
        and prev.context == rec.context
        and prev.context_ids == rec.context_ids
    )
    if not (
        type(rec.context) is str
        and (rec.continuation is None or type(rec.continuation) is str)
        and type(rec.doc_id) is int
        and type(rec.idx) is int
        and type(rec.repeats) is int
        and type(rec.instance_id) is str
        and type(rec.request_hash) is str
        and type(rec.request_type) is str
        and type(rec.task) is str
        and type(rec.kind) is str
        and rec.messages is None
        and rec.media is None
        and rec.tools is None
    ):
        return canonical_bytes(record_map(rec, prev))
    d: dict[str, Any] = {}
    if not shared:
        d["context"] = rec.context
        d["context_ids"] = _ints(rec.context_ids)
    d["continuation"] = rec.continuation
    d["continuation_ids"] = _ints(rec.continuation_ids)
    d["doc_id"] = rec.doc_id
    d["generation_kwargs"] = None if rec.generation_kwargs is None else normalize(rec.generation_kwargs)
    d["idx"] = rec.idx
    d["instance_id"] = rec.instance_id
    d["kind"] = rec.kind
    d["repeats"] = rec.repeats
    d["request_hash"] = rec.request_hash
    d["request_type"] = rec.request_type
    if shared:
        d[SHARED_CONTEXT] = True
    d["task"] = rec.task
    return pack_normalized(d)


_DOC_FIELDS = sorted(f.name for f in fields(DocRecord))
_DOC_KEY = pack_normalized("doc")
_SPLICE = _DOC_FIELDS[:2] == ["choices", "doc"] and len(_DOC_FIELDS) <= 15  # one-byte fixmap header


def encode_doc(rec: DocRecord, doc_bytes: bytes | None = None) -> bytes:
    """``canonical_bytes(rec.to_dict())``. ``doc_bytes``: ``canonical_bytes(rec.doc)`` when the caller
    already has them; they are spliced in (a msgpack map is its header followed by its key/value packs in key
    order, and "doc" sorts second, after "choices") instead of normalizing the document again."""
    if doc_bytes is None or not _SPLICE:  # (not _SPLICE: a DocRecord schema change; stay correct, go slower)
        return canonical_bytes(rec.to_dict())
    d = rec.to_dict()
    del d["doc"]
    rest = normalize(d)
    head = pack_normalized({"choices": rest.pop("choices")})  # fixmap header + the "choices" pair
    tail = pack_normalized(rest)  # the pairs after "doc", in sorted order
    return bytes([0x80 | len(_DOC_FIELDS)]) + head[1:] + _DOC_KEY + doc_bytes + tail[1:]


def encode_records(records: Iterable[Record]) -> tuple[list[bytes], list[Record]]:
    """Each record's canonical bytes, as stored (choices of a doc share their context, see ``record_map``)."""
    out: list[bytes] = []
    recs: list[Record] = []
    prev: InstanceRecord | None = None
    for r in records:
        if isinstance(r, InstanceRecord):
            out.append(encode_instance(r, prev))
            prev = r
        else:
            out.append(encode_doc(r))
            prev = None
        recs.append(r)
    return out, recs


def record_maps(objs: Iterable[Any], where: str, task: str | None = None) -> Iterator[dict[str, Any]]:
    """The stored record maps of a stream (``plans.io.unpack_stream``), shared contexts restored, each checked
    to be a doc or instance map; with ``task``, each checked to belong to that task. ``where`` starts every
    error message (the file, and the task when streaming one)."""
    prev: dict[str, Any] | None = None
    for obj in objs:
        if not isinstance(obj, dict):
            raise PlanError(f"{where}: malformed plan record (not a map)")
        kind = obj.get("kind")
        if kind == "instance":
            try:
                obj = prev = expand_record(obj, prev)
            except (ValueError, KeyError, TypeError) as e:
                raise PlanError(f"{where}: corrupt plan record stream ({e})") from None
        elif kind == "doc":
            prev = None
        else:
            raise PlanError(f"{where}: unknown plan record kind {kind!r}")
        if task is not None and obj.get("task") != task:
            raise PlanError(f"{where}: a record of task {obj.get('task')!r} lies in its span")
        yield obj


def decode_record(obj: dict[str, Any], where: str) -> Record:
    """The typed record of a map from ``record_maps``."""
    kind = obj.get("kind")
    try:
        if kind == "doc":
            return DocRecord.from_dict(obj)
        return InstanceRecord.from_dict(obj)
    except TypeError as e:
        raise PlanError(f"{where}: malformed {kind} record: {e}") from None


# -- one doc's instances at once (the compiler's hot path) ----------------------------------------------------
# A msgpack map is its header followed by each key's and value's own packing, in order; canonical maps are in
# sorted key order. So a doc's instances that share a context pack the context and its ids once, and their
# request hashes start from one sha256 state over (map header, context, context ids). Equal, byte for byte, to
# ``request_hash_of`` and ``encode_instance`` over the same records (tests/plans checks it).
_K = {k: msgpack.packb(k) for k in (
    "context", "context_ids", "continuation", "continuation_ids", "doc_id", "generation_kwargs", "idx",
    "instance_id", "kind", "repeats", "request_hash", "request_type", SHARED_CONTEXT, "task",
)}  # fmt: skip
_KIND = _K["kind"] + msgpack.packb("instance")
_SHARED = _K[SHARED_CONTEXT] + msgpack.packb(True)
_INT_ONLY = frozenset({int})

# (idx, request_type, context, continuation, generation_kwargs, context_ids, continuation_ids)
RequestTuple = tuple[int, str, str, str | None, dict[str, Any] | None, list[int] | None, list[int] | None]


def _plain_ids(ids: Any) -> bool:
    return ids is None or (type(ids) is list and set(map(type, ids)) <= _INT_ONLY)


def encode_doc_instances(
    task: str,
    doc_id: int,
    repeats: int,
    requests: list[RequestTuple],
    plain_ids: bool = False,
    ids_packer: IdsPacker | None = None,
) -> list[tuple[str, bytes]] | None:
    """(request_hash, stored bytes) of each Instance of one doc, in order, as ``request_hash_of`` and
    ``encode_instance`` (the previous Instance of the doc as ``prev``) give them; None when a value is not of
    the plain types this path packs directly (the caller then encodes the records one by one). TypeError for a
    generation_kwargs value no plan can hold. ``plain_ids``: the caller guarantees every token id list is a
    ``list`` of ``int`` (a tokenizer's output), so their elements are not checked. ``ids_packer``: packs the
    context ids (one per task, its docs in order: contexts in a row share their start, ``plans.packids``)."""
    if not (type(task) is str and type(doc_id) is int and type(repeats) is int):
        return None
    pack = msgpack.Packer(use_bin_type=True).pack
    k = _K
    tail_const = _KIND + k["repeats"] + pack(repeats)
    task_b = k["task"] + pack(task)
    doc_b = k["doc_id"] + pack(doc_id)
    out: list[tuple[str, bytes]] = []
    prev_ctx: str | None = None
    prev_ids: list[int] | None = None
    head = b""
    h0: Any = None
    for idx, rtype, ctx, cont, gk, c_ids, cont_ids in requests:
        if not (
            type(idx) is int
            and type(rtype) is str
            and type(ctx) is str
            and (cont is None or type(cont) is str)
            and (gk is None or type(gk) is dict)
        ):
            return None
        shared = h0 is not None and ctx == prev_ctx and (c_ids is prev_ids or c_ids == prev_ids)
        if not shared:
            if not (plain_ids and (c_ids is None or type(c_ids) is list)) and not _plain_ids(c_ids):
                return None
            packed_ids = pack(c_ids) if ids_packer is None or c_ids is None else ids_packer.pack(c_ids)
            head = k["context"] + pack(ctx) + k["context_ids"] + packed_ids
            h0 = hashlib.sha256(b"\x86" + head)
            prev_ctx, prev_ids = ctx, c_ids
        if not (plain_ids and (cont_ids is None or type(cont_ids) is list)) and not _plain_ids(cont_ids):
            return None
        cont_b = k["continuation"] + pack(cont) + k["continuation_ids"] + pack(cont_ids)
        gk_b = k["generation_kwargs"] + pack(None if gk is None else normalize(gk))
        rt_b = k["request_type"] + pack(rtype)
        h = h0.copy()
        h.update(cont_b + gk_b + rt_b)
        rhash = h.hexdigest()
        iid = instance_id_for(task, doc_id, idx)
        body = (
            cont_b + doc_b + gk_b + k["idx"] + pack(idx) + k["instance_id"] + pack(iid) + tail_const
            + k["request_hash"] + pack(rhash) + rt_b
        )  # fmt: skip
        blob = b"\x8c" + body + _SHARED + task_b if shared else b"\x8d" + head + body + task_b
        out.append((rhash, blob))
    return out
