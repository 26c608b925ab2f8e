"""One built task → the encoded bytes of its plan records (each doc record, then its instances), with token
ids computed in a second thread, and the data fingerprint of its evaluation split."""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor

import msgpack

from lmeval.compiler.build import BuiltTask
from lmeval.compiler.encode.tokenizer import ModelTokenizer
from lmeval.compiler.errors import fail
from lmeval.plans import (
    DocRecord,
    IdsPacker,
    InstanceRecord,
    Record,
    canonical_bytes,
    encode_doc,
    encode_doc_instances,
    encode_instance,
    instance_id_for,
    media_hashes,
    request_hash_of,
)

TokenIds = dict[tuple[int, int], tuple[list[int] | None, list[int] | None]]


_CHUNK_DOCS = 4096  # docs per tokenizing batch: the main thread encodes one batch while the next is tokenized
# request text per batch (fewer docs when theirs are long): a batch's token ids, and the tokenizer's own
# encodings of it, are held only while it is encoded, so long prompts (a trajectory's steps each repeat the
# conversation before them) cost their packed bytes, not their ids as Python lists (#64)
_CHUNK_CHARS = 1 << 20


def _bounds(bt: BuiltTask) -> list[tuple[int, int]]:
    """The tokenizing batches, as (lo, hi) doc ranges: at most ``_CHUNK_DOCS`` docs and, past the first doc of
    each, at most ``_CHUNK_CHARS`` characters of context and continuation."""
    out: list[tuple[int, int]] = []
    lo = chars = 0
    for i, d in enumerate(bt.docs):
        n = sum(len(rq.context) + len(rq.continuation or "") for rq in d.requests)
        if i > lo and (i - lo >= _CHUNK_DOCS or chars + n > _CHUNK_CHARS):
            out.append((lo, i))
            lo, chars = i, 0
        chars += n
    if lo < len(bt.docs):
        out.append((lo, len(bt.docs)))
    return out


def _token_ids(bt: BuiltTask, tok: ModelTokenizer, lo: int, hi: int) -> TokenIds:
    """Context (and continuation) token ids of the requests of docs ``lo:hi``, by (doc index, request
    index), in one batch."""
    s = bt.config
    ll_keys: list[tuple[int, int]] = []
    ll_pairs: list[tuple[str, str]] = []
    ctx_keys: list[tuple[int, int]] = []
    ctx_texts: list[str] = []
    for di in range(lo, hi):
        for ri, rq in enumerate(bt.docs[di].requests):
            if rq.request_type == "loglikelihood":
                ll_keys.append((di, ri))
                ll_pairs.append((rq.context, rq.continuation or ""))
            else:
                ctx_keys.append((di, ri))
                ctx_texts.append(rq.context)
    ids: TokenIds = {}
    for key, (c, cont) in zip(ll_keys, tok.encode_pairs(ll_pairs), strict=True):
        if not cont:
            d = bt.docs[key[0]]
            rq = d.requests[key[1]]
            raise fail(
                f"request idx {rq.idx}: continuation {rq.continuation!r} encodes to zero tokens",
                file=s.source,
                task=s.name,
                field="doc_to_target" if s.output_type != "multiple_choice" else "doc_to_choice",
                doc_id=d.doc_id,
            )
        ids[key] = (c, cont)
    for key, c in zip(ctx_keys, tok.encode_many(ctx_texts), strict=True):
        ids[key] = (c, None)
    return ids


def _fingerprint(bt: BuiltTask) -> tuple[str, list[bytes]]:
    """The data fingerprint (``content_hash`` of the list of eval docs, computed incrementally) and the
    canonical bytes of the selected docs."""
    s = bt.config
    fp = hashlib.sha256()
    fp.update(_array_header(len(bt.eval_docs)))
    doc_bytes: list[bytes] = [b""] * len(bt.docs)
    at = {d.doc_id: k for k, d in enumerate(bt.docs)}  # the first N (run.limit) or a subset (run.subsample)
    for i, doc in enumerate(bt.eval_docs):
        try:
            b = canonical_bytes(doc)
        except TypeError as e:
            raise fail(f"document cannot be stored in a plan: {e}", file=s.source, task=s.name, doc_id=i) from None
        fp.update(b)
        k = at.get(i)
        if k is not None:
            doc_bytes[k] = b
    return fp.hexdigest(), doc_bytes


def _doc_records(bt: BuiltTask, doc_bytes: list[bytes]) -> tuple[list[DocRecord], list[bytes]]:
    """The task's doc records and their stored bytes (``doc_bytes``: each doc's canonical bytes)."""
    s = bt.config
    recs: list[DocRecord] = []
    blobs: list[bytes] = []
    for di, d in enumerate(bt.docs):
        rec = DocRecord(
            task=s.name,
            doc_id=d.doc_id,
            doc=d.doc,
            target=d.target,
            choices=d.choices,
            fewshot_ids=d.fewshot_ids,
            doc_hash=hashlib.sha256(doc_bytes[di]).hexdigest(),
        )
        try:
            blobs.append(encode_doc(rec, doc_bytes[di]))
        except TypeError as e:
            raise fail(f"target or choices cannot be stored in a plan: {e}", file=s.source, task=s.name,
                       doc_id=d.doc_id) from None  # fmt: skip
        recs.append(rec)
    return recs, blobs


def task_records(bt: BuiltTask, tok: ModelTokenizer | None) -> tuple[list[bytes], str]:
    """The stored bytes of the task's records in plan order (each doc record, then its instances) and the data
    fingerprint.

    Token ids are computed batch by batch (``_CHUNK_DOCS``). When the tokenizer's work runs mostly in its Rust
    core, which releases the GIL (``ModelTokenizer.threaded``), in a second thread while this one encodes the
    documents and then each batch's instances, so the two overlap; otherwise (most of it in Python, where a
    second thread only adds switching) here, in the same order. Results and errors do not depend on which
    (the documents first, then each batch's token ids and instances, in order)."""
    n = len(bt.docs)
    if tok is None:
        fingerprint, doc_bytes = _fingerprint(bt)
        docs, doc_blobs = _doc_records(bt, doc_bytes)
        return _instance_records(bt, docs, doc_blobs, {}, 0, n)[1], fingerprint
    blobs: list[bytes] = []
    bounds = _bounds(bt)
    packer = IdsPacker()
    if not tok.threaded:
        fingerprint, doc_bytes = _fingerprint(bt)
        docs, doc_blobs = _doc_records(bt, doc_bytes)
        for lo, hi in bounds:
            blobs += _instance_records(bt, docs, doc_blobs, _token_ids(bt, tok, lo, hi), lo, hi, packer)[1]
        return blobs, fingerprint
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lmeval-tokenize") as pool:
        # the tokenizing thread runs one batch ahead of this one, no further: its ids wait for no more than that
        pending: list[Future[TokenIds] | None] = [pool.submit(_token_ids, bt, tok, lo, hi) for lo, hi in bounds[:1]]
        try:
            fingerprint, doc_bytes = _fingerprint(bt)
            docs, doc_blobs = _doc_records(bt, doc_bytes)
            for k, (lo, hi) in enumerate(bounds):
                if k + 1 < len(bounds):
                    pending.append(pool.submit(_token_ids, bt, tok, *bounds[k + 1]))
                fut, pending[k] = pending[k], None
                assert fut is not None
                blobs += _instance_records(bt, docs, doc_blobs, fut.result(), lo, hi, packer)[1]
        finally:
            for left in pending:
                if left is not None:
                    left.cancel()  # after an error: do not tokenize the rest
    return blobs, fingerprint


def _instance_records(
    bt: BuiltTask,
    docs: list[DocRecord],
    doc_blobs: list[bytes],
    ids: TokenIds,
    lo: int,
    hi: int,
    ids_packer: IdsPacker | None = None,
) -> tuple[list[Record], list[bytes]]:
    """Docs ``lo:hi`` in plan order (each doc record, then its instances) and their stored bytes. The
    instances of a doc are packed together (``encode_doc_instances``) and kept as bytes only: the records
    themselves are made only for a doc with values that path does not take. ``ids_packer``: the task's (its
    docs' contexts in a row share their start)."""
    s = bt.config
    out: list[Record] = []
    blobs: list[bytes] = []
    for di in range(lo, hi):
        d = bt.docs[di]
        out.append(docs[di])
        blobs.append(doc_blobs[di])
        reqs = [
            (
                rq.idx,
                rq.request_type,
                rq.context,
                rq.continuation,
                rq.generation_kwargs,
                *ids.get((di, ri), (None, None)),
            )
            for ri, rq in enumerate(d.requests)
        ]
        try:
            # token ids come from the tokenizer (lists of int): not checked element by element
            fast = (  # a chat-templated generation keeps its messages: encoded one by one below
                None
                if any(rq.messages is not None or rq.media is not None or rq.tools is not None for rq in d.requests)
                else encode_doc_instances(s.name, d.doc_id, s.repeats, reqs, True, ids_packer)  # type: ignore[arg-type]
            )
        except TypeError as e:
            raise fail(f"request cannot be stored in a plan: {e}", file=s.source, task=s.name,
                       field="generation_kwargs", doc_id=d.doc_id) from None  # fmt: skip
        if fast is not None:
            blobs += [b for _, b in fast]
            continue
        prev: InstanceRecord | None = None
        for ri, rq in enumerate(d.requests):
            c_ids, cont_ids = ids.get((di, ri), (None, None))
            rec = InstanceRecord(
                instance_id=instance_id_for(s.name, d.doc_id, rq.idx),
                task=s.name,
                doc_id=d.doc_id,
                idx=rq.idx,
                request_type=rq.request_type,
                context=rq.context,
                continuation=rq.continuation,
                generation_kwargs=rq.generation_kwargs,
                repeats=s.repeats,
                context_ids=c_ids,
                continuation_ids=cont_ids,
                request_hash=request_hash_of(
                    rq.request_type,
                    rq.context,
                    rq.continuation,
                    rq.generation_kwargs,
                    c_ids,
                    cont_ids,
                    media_hashes(rq.media),
                ),  # fmt: skip
                messages=rq.messages,
                media=rq.media,
                tools=rq.tools,
            )
            try:
                blobs.append(encode_instance(rec, prev))
            except TypeError as e:
                raise fail(f"request cannot be stored in a plan: {e}", file=s.source, task=s.name,
                           field="generation_kwargs", doc_id=d.doc_id) from None  # fmt: skip
            out.append(rec)
            prev = rec
    return out, blobs


def _array_header(n: int) -> bytes:
    p = msgpack.Packer()
    return p.pack_array_header(n)
