"""Chunks of a plan (executor/pool/chunks.py) and chunk parts (executor/pool/chunkstore.py), without Ray."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lmeval.executor.errors import ExecuteError
from lmeval.executor.pool.chunks import default_chunk_size, make_chunks
from lmeval.executor.pool.chunkstore import (
    check_chunk_parts,
    check_chunk_rows,
    check_complete,
    chunk_part_name,
    commit_chunk,
    rows_to_parquet,
)
from lmeval.plans.plan import read_plan
from tests.executor import plantools as pt


def test_chunks_cover_the_plan_once_at_document_boundaries(mixed_plan: Path) -> None:
    instances = list(read_plan(mixed_plan).instances)
    for size in (1, 5, 32, 10_000):
        chunks = make_chunks(instances, size)
        flat = [i.instance_id for c in chunks for i in c.instances]
        assert sorted(flat) == sorted(i.instance_id for i in instances)  # each Instance once
        assert [c.index for c in chunks] == list(range(len(chunks)))
        docs = {}
        for c in chunks:
            for i in c.instances:
                assert docs.setdefault((i.task, i.doc_id), c.index) == c.index  # a document is never split
        assert all(len(c.instances) >= size for c in chunks[:-1])
        assert make_chunks(instances, size) == chunks  # deterministic
    assert len(make_chunks(instances, 10_000)) == 1
    assert len(make_chunks(instances, 1)) == len({(i.task, i.doc_id) for i in instances})


def test_repeated_requests_join_the_chunk_of_their_first_occurrence(tmp_path: Path) -> None:
    # the same arc_easy questions under two task names: equal requests, different documents
    path = tmp_path / "twice.msgpack"
    pt.build(path, [pt.arc_easy(6, name="arc_a"), pt.arc_easy(6, name="arc_b")])
    instances = list(read_plan(path).instances)
    chunks = make_chunks(instances, 4)
    home = {}
    for c in chunks:
        for i in c.instances:
            assert home.setdefault(i.request_hash, c.index) == c.index
    assert any(i.task == "arc_b" for i in chunks[0].instances)


def test_default_chunk_size_bounds() -> None:
    assert default_chunk_size(10) == 32
    assert default_chunk_size(56_168) == 439
    assert default_chunk_size(10_000_000) == 4096
    with pytest.raises(ValueError):
        make_chunks([], 0)


def test_chunk_parts_are_checked_before_and_after_commit(mixed_plan: Path, tmp_path: Path) -> None:
    plan = read_plan(mixed_plan)
    chunk = make_chunks(list(plan.instances), 8)[2]
    rows = [
        {"instance_id": i.instance_id, "task": i.task, "doc_id": i.doc_id, "idx": i.idx,
         "request_type": i.request_type, "request_hash": i.request_hash, "loglikelihood": -1.0}
        for i in chunk.instances
    ]  # fmt: skip
    data = rows_to_parquet(rows)
    n = check_chunk_rows(data, chunk.instances, "chunk 2")
    assert n == len(chunk.instances)
    with pytest.raises(ExecuteError, match="returned .* rows for"):
        check_chunk_rows(rows_to_parquet(rows[:-1]), chunk.instances, "chunk 2")
    with pytest.raises(ExecuteError, match="returned .* rows for"):
        check_chunk_rows(rows_to_parquet([*rows, rows[0]]), chunk.instances, "chunk 2")
    with pytest.raises(ExecuteError, match="request hash differs"):
        check_chunk_rows(rows_to_parquet([{**rows[0], "request_hash": "x"}, *rows[1:]]), chunk.instances, "chunk 2")
    with pytest.raises(ExecuteError, match="unreadable"):
        check_chunk_rows(b"not parquet", chunk.instances, "chunk 2")

    h = plan.header.plan_hash
    p1 = commit_chunk(tmp_path, h, 2, data, n)
    digest = hashlib.sha256(data).hexdigest()  # committed under its checksummed name (plans/results/partsum.py)
    assert p1.name == chunk_part_name(h, 2, n, digest=digest) and p1.read_bytes() == data
    p2 = commit_chunk(tmp_path, h, 2, data, n)  # never overwrites
    assert p2 != p1 and p1.read_bytes() == data
    check_chunk_parts(tmp_path, h)
    with pytest.raises(ExecuteError, match="a chunk part of plan"):
        check_chunk_parts(tmp_path, "f" * 64)
    p1.rename(tmp_path / chunk_part_name(h, 2, n + 1))
    with pytest.raises(ExecuteError, match="its name says"):
        check_chunk_parts(tmp_path, h)


def test_check_complete_finds_gaps_duplicates_and_strays(mixed_plan: Path, tmp_path: Path) -> None:
    plan = read_plan(mixed_plan)
    insts = list(plan.instances)
    chunks = make_chunks(insts, 40)
    h = plan.header.plan_hash

    def rows(c: list) -> bytes:  # type: ignore[type-arg]
        return rows_to_parquet([{"instance_id": i.instance_id, "request_hash": i.request_hash} for i in c])

    for ch in chunks:
        commit_chunk(tmp_path, h, ch.index, rows(list(ch.instances)), len(ch.instances))
    check_complete(tmp_path, insts)
    with pytest.raises(ExecuteError, match="have no row"):
        check_complete(tmp_path, [*insts, pt.arc_easy(1, name="other")[2][0][1][0]])
    with pytest.raises(ExecuteError, match="of no instance of the plan"):
        check_complete(tmp_path, insts[1:])
    commit_chunk(tmp_path, h, 0, rows([insts[0]]), 1)
    with pytest.raises(ExecuteError, match=f"instance {insts[0].instance_id} has 2 rows"):
        check_complete(tmp_path, insts)
