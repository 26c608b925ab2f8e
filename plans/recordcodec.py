"""One plan record and its stored form: the map stored per record (an Instance sharing its doc's context stores
it once, see ``record_map``), its canonical bytes (``encode_instance``/``encode_doc``, fast paths equal to
``canonical_bytes`` of the map), and back: raw maps restored and checked (``record_maps``), then typed records
(``decode_record``). Files, frames and hashes are elsewhere (``plans/io.py``, ``plans/storage.py``,
``plans/integrity.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any

from lmeval.plans.canonical import canonical_bytes, normalize, pack_normalized
from lmeval.plans.errors import PlanError
from lmeval.plans.records import DocRecord, InstanceRecord

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
