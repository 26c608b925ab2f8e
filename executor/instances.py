"""A plan's Instances as the executor runs them: the whole file read and verified, then one shard's part."""

from __future__ import annotations

import re
from typing import Any

from lmeval.executor.errors import ExecuteError
from lmeval.plans import REQUEST_TYPES, InstanceRecord, PlanError, PlanHeader, PlanReader, shard_of


def parse_shard(shard: str | None) -> tuple[int, int] | None:
    if shard is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", shard)
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise ExecuteError(f"--shard {shard}: expected I/N with 0 <= I < N (e.g. 0/4)")
    return int(m.group(1)), int(m.group(2))


def load_instances(plan_path: str, shard: tuple[int, int] | None) -> tuple[PlanHeader, list[InstanceRecord]]:
    """The plan's Instances (of one shard), after reading and verifying the whole file."""
    with PlanReader(plan_path) as reader:
        header = reader.header
        out: list[InstanceRecord] = []
        seen: set[str] = set()
        for rec in reader:
            if not isinstance(rec, InstanceRecord):
                continue
            if rec.instance_id in seen:
                raise PlanError(f"{plan_path}: instance {rec.instance_id} ({rec.task} doc {rec.doc_id}) repeats")
            seen.add(rec.instance_id)
            if shard is None or shard_of(rec.instance_id, shard[1]) == shard[0]:
                out.append(rec)
    for rec in out:
        if rec.request_type not in REQUEST_TYPES:
            raise ExecuteError(
                f"{plan_path}: task {rec.task} doc {rec.doc_id}: unknown request_type {rec.request_type!r}"
            )
    return header, out


def instance_columns(inst: InstanceRecord) -> dict[str, Any]:
    """The columns of a result row that name its Instance (whatever answered it: the engine, the store, a reuse)."""
    return {
        "instance_id": inst.instance_id,
        "task": inst.task,
        "doc_id": inst.doc_id,
        "idx": inst.idx,
        "request_type": inst.request_type,
        "request_hash": inst.request_hash,
    }
