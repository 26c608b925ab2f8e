"""Chunk parts: how a worker's answer to one chunk becomes a Parquet part of the results directory.

The driver alone writes: a worker returns the chunk's rows as Parquet bytes; ``commit_chunk`` checks them
against the plan (exactly the chunk's pending Instances, each once, with the plan's request hashes and the
results schema) and only then writes them atomically (temporary file, fsync, rename) as
``part-c<chunk>-<plan_hash12>-n<rows>.parquet``. A part is complete or absent whenever a process dies, and a
chunk whose worker died never reaches the directory, so rows are neither lost nor duplicated. Readers
(score, resume, merge) see ordinary ``part-*.parquet`` files.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lmeval.common import write_atomic
from lmeval.executor import faults
from lmeval.executor.errors import ExecuteError
from lmeval.executor.store import fsync_dir, rows_frame, write_parquet
from lmeval.plans import RESULT_COLUMNS, InstanceRecord, checksummed, part_files, read_parts, reraised_as

CHUNK_PART_RE = re.compile(r"part-c(\d+)-([0-9a-f]{12})-n(\d+)(?:-r\d+)?(?:-s[0-9a-f]{64})?\.parquet$")


def chunk_part_name(plan_hash: str, chunk: int, rows: int, retry: int = 0, digest: str | None = None) -> str:
    """A chunk part's name; with ``digest`` (sha256 of its bytes), the checksummed name it is committed as."""
    suffix = f"-r{retry}" if retry else ""
    stem = f"part-c{chunk:06d}-{plan_hash[:12]}-n{rows}{suffix}"
    return checksummed(stem, digest) if digest else f"{stem}.parquet"


def rows_to_parquet(rows: Sequence[dict[str, Any]]) -> bytes:
    """The bytes of one part holding ``rows`` (written by the worker, checked and committed by the driver)."""
    buf = io.BytesIO()
    write_parquet(rows_frame(rows), buf)
    return buf.getvalue()


def check_chunk_rows(data: bytes, expected: Sequence[InstanceRecord], what: str) -> int:
    """Raise unless ``data`` is a Parquet part of exactly the Instances ``expected``; return its row count."""
    import polars as pl

    try:
        df = pl.read_parquet(io.BytesIO(data))
    except Exception as e:
        raise ExecuteError(f"{what}: the worker returned an unreadable part ({type(e).__name__}: {e})") from None
    if list(df.columns) != list(RESULT_COLUMNS):
        raise ExecuteError(f"{what}: the worker's part has columns {df.columns}, not the results schema")
    want = {i.instance_id: i.request_hash for i in expected}
    got = dict(zip(df["instance_id"].to_list(), df["request_hash"].to_list(), strict=True))
    if df.height != len(want) or got.keys() != want.keys():
        missing = sorted(want.keys() - got.keys())
        extra = sorted(got.keys() - want.keys())
        raise ExecuteError(
            f"{what}: the worker returned {df.height} rows for {len(want)} instances "
            f"(missing {missing[:3]}, unexpected {extra[:3]}, or repeated)"
        )
    bad = [k for k, h in want.items() if got[k] != h]
    if bad:
        raise ExecuteError(f"{what}: instance {bad[0]}: the worker's request hash differs from the plan's")
    return int(df.height)


def commit_chunk(results_dir: Path, plan_hash: str, chunk: int, data: bytes, rows: int) -> Path:
    """Write a checked chunk part atomically; never overwrite a part already there."""
    retry = 0
    digest = hashlib.sha256(data).hexdigest()
    while any(
        (results_dir / name).exists() or any(results_dir.glob(name[: -len(".parquet")] + "-s*.parquet"))
        for name in [chunk_part_name(plan_hash, chunk, rows, retry)]
    ):
        retry += 1
    target = results_dir / chunk_part_name(plan_hash, chunk, rows, retry, digest)
    write_atomic(target, lambda f: f.write(data))
    fsync_dir(results_dir)
    faults.point("chunk-part")
    return target


def check_chunk_parts(results_dir: Path, plan_hash: str) -> None:
    """Refuse a directory holding chunk parts of another plan or whose row count differs from its name."""
    import pyarrow.parquet as pq

    for p in part_files(results_dir):
        m = CHUNK_PART_RE.match(p.name)
        if m is None:
            continue
        if m.group(2) != plan_hash[:12]:
            raise ExecuteError(f"{p}: a chunk part of plan {m.group(2)}, this plan is {plan_hash[:12]}")
        try:
            n = pq.ParquetFile(p).metadata.num_rows
        except Exception as e:
            raise ExecuteError(f"{p}: unreadable result part ({type(e).__name__}: {e})") from None
        if n != int(m.group(3)):
            raise ExecuteError(f"{p}: holds {n} rows, its name says {m.group(3)}")


def check_complete(results_dir: Path, instances: Sequence[InstanceRecord]) -> None:
    """After a run: every Instance of ``instances`` has exactly one row in ``results_dir``, and nothing else."""
    with reraised_as(ExecuteError):
        ids = read_parts(part_files(results_dir), ["instance_id"])["instance_id"]
    dup = ids.filter(ids.is_duplicated())
    if dup.len():
        raise ExecuteError(f"{results_dir}: instance {dup[0]} has {int((ids == dup[0]).sum())} rows")
    want = {i.instance_id for i in instances}
    have = set(ids.to_list())
    if have != want:
        missing, extra = sorted(want - have), sorted(have - want)
        raise ExecuteError(
            f"{results_dir}: {len(missing)} instances of the plan have no row ({missing[:3]}), "
            f"{len(extra)} rows are of no instance of the plan ({extra[:3]})"
        )
