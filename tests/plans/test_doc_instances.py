"""``recordcodec.encode_doc_instances`` (the compiler's one-doc-at-a-time packing) gives exactly the request
hashes and stored bytes of ``request_hash_of`` + ``encode_instance`` over the same records."""

from __future__ import annotations

import random

from lmeval.plans.plan import (
    IdsPacker,
    InstanceRecord,
    encode_doc_instances,
    encode_instance,
    instance_id_for,
    request_hash_of,
)

_SHOTS: list[list[int]] = [[], list(range(100, 160))]


def _doc(rnd: random.Random) -> list[tuple]:  # type: ignore[type-arg]
    ctx = rnd.choice(["", "Q: 1+1?\nA:", "é\u2028ü " * rnd.randint(1, 40)])
    start = rnd.choice(_SHOTS)  # a start other docs' context ids share (or none)
    ids = None if rnd.random() < 0.2 else start + [rnd.randint(0, 2**17) for _ in range(rnd.randint(0, 300))]
    out = []
    for idx in range(rnd.randint(1, 5)):
        if rnd.random() < 0.3:  # a context of its own (multiple-input docs)
            ctx = ctx + str(idx)
            ids = None if ids is None else [*ids, idx]
        if rnd.random() < 0.5:
            out.append((idx, "loglikelihood", ctx, f" choice {idx}", None, ids, None if ids is None else [idx, 7]))
        else:
            gk = {"until": ["\n\n", "Q:"], "temperature": 0.0, "max_gen_toks": rnd.randint(1, 999), "do_sample": False}
            out.append((idx, "generate_until", ctx, None, gk, ids, None))
    return out


def test_equals_record_by_record() -> None:
    rnd = random.Random(7)
    packers = [IdsPacker(), IdsPacker()]  # context ids packed with the previous docs' start (plans/plan/packids.py)
    for doc_id in range(300):
        reqs = _doc(rnd)
        task, repeats = rnd.choice(["arc_easy", "t\u00e4sk"]), rnd.choice([1, 3])
        for plain, packer in ((False, None), (True, None), (False, packers[0]), (True, packers[1])):
            fast = encode_doc_instances(task, doc_id, repeats, reqs, plain, packer)  # type: ignore[arg-type]
            assert fast is not None
            prev = None
            for (idx, rt, ctx, cont, gk, c_ids, k_ids), (rhash, blob) in zip(reqs, fast, strict=True):
                want = request_hash_of(rt, ctx, cont, gk, c_ids, k_ids)
                rec = InstanceRecord(instance_id=instance_id_for(task, doc_id, idx), task=task, doc_id=doc_id,
                                     idx=idx, request_type=rt, context=ctx, continuation=cont, generation_kwargs=gk,
                                     repeats=repeats, context_ids=c_ids, continuation_ids=k_ids,
                                     request_hash=want)  # fmt: skip
                assert rhash == want
                assert blob == encode_instance(rec, prev)
                prev = rec


def test_other_types_fall_back() -> None:
    reqs = [(0, "loglikelihood", "ctx", " a", None, (1, 2), [3])]
    assert encode_doc_instances("t", 0, 1, reqs) is None  # type: ignore[arg-type]
    assert encode_doc_instances("t", 0, 1, [(0, "loglikelihood", "c", " a", None, [True], [3])]) is None
    assert encode_doc_instances("t", True, 1, [(0, "loglikelihood", "c", " a", None, [1], [3])]) is None  # type: ignore[arg-type]
