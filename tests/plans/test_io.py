"""The plan contract: canonical bytes, hashing, streaming, and refusal of damaged plans."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import msgpack
import pytest

from lmeval.plans import (
    DocRecord,
    InstanceRecord,
    ModelInfo,
    PlanError,
    PlanHeader,
    PlanReader,
    TaskSummary,
    canonical_bytes,
    instance_id_for,
    read_header,
    read_plan,
    write_plan,
)
from lmeval.plans.plan import request_hash_of, shard_of
from lmeval.plans.plan.io import with_derived

DATA = Path(os.environ.get("LMEVAL_DATA_DIR", Path(__file__).resolve().parents[2].parent / "shared" / "data"))


def _arc_records(n: int = 20) -> tuple[PlanHeader, list[DocRecord | InstanceRecord]]:
    rows = [json.loads(line) for line in (DATA / "arc_easy" / "test.jsonl").read_text().splitlines()[:n]]
    records: list[DocRecord | InstanceRecord] = []
    n_inst = 0
    for doc_id, row in enumerate(rows):
        choices = row["choices"]["text"]
        target = row["choices"]["label"].index(row["answerKey"])
        records.append(with_derived(DocRecord(task="arc_easy", doc_id=doc_id, doc=row, target=target, choices=choices)))
        ctx = f"Question: {row['question']}\nAnswer:"
        for idx, choice in enumerate(choices):
            cont = f" {choice}"
            records.append(
                InstanceRecord(
                    instance_id=instance_id_for("arc_easy", doc_id, idx),
                    task="arc_easy",
                    doc_id=doc_id,
                    idx=idx,
                    request_type="loglikelihood",
                    context=ctx,
                    continuation=cont,
                    request_hash=request_hash_of("loglikelihood", ctx, cont, None, None, None),
                )
            )
            n_inst += 1
    header = PlanHeader(
        config={"run": {"limit": n}, "model": {"name": "tiny"}},
        model=ModelInfo(name="tiny"),
        tasks=[
            TaskSummary(
                name="arc_easy",
                output_type="multiple_choice",
                n_docs=len(rows),
                n_instances=n_inst,
                num_fewshot=0,
                task_hash="",
                data_fingerprint="x",
                metric_list=[{"metric": "acc"}],
            )
        ],
    )
    return header, records


def test_canonical_bytes_sort_keys_and_refuse_non_data() -> None:
    assert canonical_bytes({"b": 1, "a": [1, (2, 3)]}) == canonical_bytes({"a": [1, [2, 3]], "b": 1})
    with pytest.raises(TypeError):
        canonical_bytes({"a": b"bytes"})
    with pytest.raises(TypeError):
        canonical_bytes({"a": float("nan")})
    with pytest.raises(TypeError):
        canonical_bytes({1: "int key"})


def test_roundtrip_and_hash(tmp_path: Path) -> None:
    header, records = _arc_records()
    sealed = write_plan(tmp_path / "p.msgpack", header, records)
    assert len(sealed.plan_hash) == 64
    assert sealed.n_docs == 20 and sealed.n_instances == sealed.tasks[0].n_instances
    assert sealed.tasks[0].task_hash and sealed.tasks[0].task_hash != sealed.plan_hash
    plan = read_plan(tmp_path / "p.msgpack")
    assert plan.header == sealed
    assert plan.docs + plan.instances and plan.instances[0] == records[1]
    assert plan.instances[0].arguments == (records[1].context, records[1].continuation)  # type: ignore[union-attr]
    assert read_header(tmp_path / "p.msgpack").plan_hash == sealed.plan_hash
    with PlanReader(tmp_path / "p.msgpack") as r:
        only = list(r.records(task="arc_easy"))
    assert only == records


def test_same_content_same_bytes_in_other_process(tmp_path: Path) -> None:
    header, records = _arc_records()
    write_plan(tmp_path / "a.msgpack", header, records)
    code = (
        "import sys; sys.path.insert(0, {!r}); from tests.plans.test_io import _arc_records; "
        "from plans import write_plan; h, r = _arc_records(); write_plan({!r}, h, r)"
    ).format(str(Path(__file__).resolve().parents[2]), str(tmp_path / "b.msgpack"))
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert (tmp_path / "a.msgpack").read_bytes() == (tmp_path / "b.msgpack").read_bytes()


def test_modified_plan_is_refused(tmp_path: Path) -> None:
    header, records = _arc_records()
    p = tmp_path / "p.msgpack"
    write_plan(p, header, records, codec="none")  # an edit to the records themselves (compressed: test_storage)
    data = bytearray(p.read_bytes())
    i = data.rindex(b"Answer:")
    data[i] = ord("a")
    p.write_bytes(bytes(data))
    # the edited record no longer matches its request_hash (plans/plan/validate.py), before the plan hash is checked
    with pytest.raises(PlanError, match="request_hash: is not the hash of the request's content"):
        read_plan(p)


def test_edited_header_is_refused_by_the_plan_hash(tmp_path: Path) -> None:
    """A header edit no record check can see (the model's name, still a valid string) is caught by plan_hash."""
    header, records = _arc_records()
    p = tmp_path / "p.msgpack"
    write_plan(p, header, records, codec="none")
    data = p.read_bytes()
    assert data.count(b"tiny") >= 1
    p.write_bytes(data.replace(b"tiny", b"tinz", 1))
    with pytest.raises(PlanError, match="hash mismatch"):
        read_plan(p)


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_truncated_plan_is_refused(tmp_path: Path, codec: str) -> None:
    header, records = _arc_records()
    p = tmp_path / "p.msgpack"
    write_plan(p, header, records, codec)
    data = p.read_bytes()
    for cut in (len(data) - 1, len(data) - 200, len(data) // 2):
        p.write_bytes(data[:cut])
        with pytest.raises(PlanError):
            read_plan(p)


def test_non_plan_and_other_version(tmp_path: Path) -> None:
    p = tmp_path / "x.msgpack"
    p.write_bytes(b"hello world, not msgpack at all \xff\xfe")
    with pytest.raises(PlanError, match="not an lmeval plan"):
        read_header(p)
    p.write_bytes(msgpack.packb({"format": "lmeval-plan", "version": 99}))
    with pytest.raises(PlanError, match="version 99"):
        read_header(p)
    p.write_bytes(b"")
    with pytest.raises(PlanError, match="empty"):
        read_header(p)


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    header, records = _arc_records()
    bad = records + [DocRecord(task="arc_easy", doc_id=999, doc={"x": float("inf")}, target=0)]
    with pytest.raises(TypeError):
        write_plan(tmp_path / "p.msgpack", header, bad)
    assert list(tmp_path.iterdir()) == []


def test_instance_ids_and_shards_are_stable() -> None:
    # Pinned literals: ids are what resume, shards and merge key on across machines and releases, so they may
    # never move. The values are sha256("task\0doc_id\0idx")[:16], computed outside lmeval.
    assert instance_id_for("arc_easy", 3, 1) == "101d768cfa48f866"
    assert instance_id_for("arc_easy", 1, 3) == "ec180e59cd50dc4d"
    assert instance_id_for("gsm8k", 0, 0) == "b187beea28c7feed"
    assert [shard_of(instance_id_for("t", d, 0), 3) for d in range(12)] == [2, 1, 2, 2, 1, 0, 2, 0, 2, 2, 0, 1]
    ids = [instance_id_for("t", d, 0) for d in range(3000)]
    counts = [sum(shard_of(i, 3) == s for i in ids) for s in range(3)]
    assert sum(counts) == 3000 and min(counts) > 900


def test_choices_of_a_doc_store_their_shared_context_once(tmp_path: Path) -> None:
    header, records = _arc_records(5)
    p = tmp_path / "p.msgpack"
    write_plan(p, header, records, codec="none")
    raw = p.read_bytes()
    for rec in records:
        if isinstance(rec, DocRecord):
            ctx = f"Question: {rec.doc['question']}\nAnswer:".encode()
            assert raw.count(ctx) == 1
    plan = read_plan(p)
    assert plan.instances == [r for r in records if isinstance(r, InstanceRecord)]


def test_fast_instance_encoding_equals_the_generic_canonical_encoding() -> None:
    from dataclasses import fields as dc_fields

    from lmeval.plans.plan.recordcodec import encode_instance, record_map

    _, records = _arc_records(4)
    insts = [r for r in records if isinstance(r, InstanceRecord)]
    assert {f.name for f in dc_fields(InstanceRecord)} == {
        "instance_id",
        "task",
        "doc_id",
        "idx",
        "request_type",
        "context",
        "continuation",
        "generation_kwargs",
        "repeats",
        "context_ids",
        "continuation_ids",
        "request_hash",
        "kind",
        "messages",
        "media",
        "tools",
    }  # fmt: skip  (a new field must be added to encode_instance too)
    gen = InstanceRecord(
        instance_id="ab", task="t", doc_id=1, idx=0, request_type="generate_until", context="Q: 1+1\\nA:",
        generation_kwargs={"until": ["\\n"], "temperature": 0.0, "max_gen_toks": 8}, context_ids=[5, 6, 7],
    )  # fmt: skip
    chat = replace(gen, messages=[{"role": "user", "content": "Q: 1+1"}])
    tool = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}
    tooled = replace(chat, tools=[tool])
    prev = None
    for rec in [*insts, gen, chat, tooled]:
        assert encode_instance(rec, prev) == canonical_bytes(record_map(rec, prev))
        prev = rec
    assert b"messages" not in encode_instance(gen, None) and b"messages" in encode_instance(chat, None)
    shown = replace(gen, media=[{"sha256": "a" * 64, "mime": "image/png", "width": 2, "height": 3, "size": 9,
                                 "pixels": "b" * 64, "placeholder": None, "offset": None}])  # fmt: skip
    assert encode_instance(shown, None) == canonical_bytes(record_map(shown, None))
    assert b"media" not in encode_instance(gen, None) and b"media" in encode_instance(shown, None)
    assert b"tools" not in encode_instance(chat, None) and b"tools" in encode_instance(tooled, None)


def test_to_dict_names_every_field() -> None:
    from dataclasses import fields as dc_fields

    _, records = _arc_records(1)
    for rec in records:
        optional = {f for f in ("messages", "media", "tools") if getattr(rec, f, 0) is None}  # stored only when set
        assert list(rec.to_dict()) == [f.name for f in dc_fields(rec) if f.name not in optional]
        assert type(rec).from_dict(rec.to_dict()) == rec


def test_spliced_doc_encoding_equals_the_generic_canonical_encoding() -> None:
    from lmeval.plans.plan.recordcodec import encode_doc, encode_records, record_map

    _, records = _arc_records(6)
    docs = [r for r in records if isinstance(r, DocRecord)]
    odd = DocRecord(task="t", doc_id=9, doc={"z": [1.5, {"b": None, "a": True}], "a": "x"}, target=[0, "y"],
                    choices=None, fewshot_ids=[3, 1], doc_hash="h")  # fmt: skip
    for rec in [*docs, odd]:
        assert encode_doc(rec, canonical_bytes(rec.doc)) == canonical_bytes(record_map(rec, None))
    assert encode_records(docs)[0] == [canonical_bytes(record_map(r, None)) for r in docs]


@pytest.mark.parametrize(
    "value",
    [
        {"b": [1, 2, True, None, "s"], "a": {"d": 1.0, "c": [[1], ("x", 2)]}},
        [{"k": 1}, 2, "3", None, False, -1.25, []],
        ("t", (1, 2)),
        {},
    ],
)
def test_canonical_bytes_equal_a_sorted_generic_pack(value: object) -> None:
    def sort(v: object) -> object:
        if isinstance(v, dict):
            return {k: sort(v[k]) for k in sorted(v)}
        if isinstance(v, list | tuple):
            return [sort(x) for x in v]
        return v

    assert canonical_bytes(value) == msgpack.packb(sort(value), use_bin_type=True)


@pytest.mark.parametrize("bad", [{1: "a"}, {"a": {2: 1}}, [float("nan")], {"a": [1, float("inf")]}, [b"x"], {"s": {1}}])
def test_canonical_bytes_refuse_what_has_no_canonical_form(bad: object) -> None:
    with pytest.raises(TypeError):
        canonical_bytes(bad)


@pytest.mark.parametrize(
    "args",
    [
        ("loglikelihood", "Question: 2+2?\nAnswer:", " 4", None, [5, 6, 7], [8]),
        (
            "generate_until",
            "Q: x\nA:",
            None,
            {"until": ["\n\n", "Q:"], "max_gen_toks": 32, "do_sample": False},
            [1, 2],
            None,
        ),  # fmt: skip
        ("loglikelihood_rolling", "some text", None, None, None, None),
        ("generate_until", "Q", None, {"temperature": 0.5, "b": {"z": 1, "a": [1.5]}}, (1, 2), None),  # tuple ids
        ("loglikelihood", "ctx", "cont", None, [1, True], [2]),  # a bool among the ids
    ],
)
def test_request_hash_one_pack_equals_the_canonical_hash(args: tuple) -> None:
    from lmeval.plans.plan import content_hash

    rt, ctx, cont, gk, c_ids, cont_ids = args
    want = content_hash({"request_type": rt, "context": ctx, "continuation": cont, "generation_kwargs": gk,
                         "context_ids": c_ids, "continuation_ids": cont_ids})  # fmt: skip
    assert request_hash_of(rt, ctx, cont, gk, c_ids, cont_ids) == want
