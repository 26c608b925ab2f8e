"""``merge``: combine the results directories of shards ``0/N .. N-1/N`` of one plan into one directory.

Refuses directories of different plans or models, overlapping or missing shards, unfinished shards, any
row that is not its shard's Instance of the plan (``plans.rowcheck``: a shard of another plan under an
edited manifest, a duplicated part) and an output directory that already holds anything. The merged
directory is assembled under a temporary name and renamed into place, so it appears complete or not at all.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmeval.executor.errors import ExecuteError
from lmeval.executor.instances import load_instances
from lmeval.executor.modelconf import REUSE_KEYS
from lmeval.executor.store import fsync_dir
from lmeval.plans import (
    PART,
    InstanceRecord,
    Numerics,
    PlanError,
    RunManifest,
    check_rows,
    checksummed,
    part_files,
    part_sha256,
    plan_keys,
    plan_of,
    read_manifest,
    read_row_keys,
    reraised_as,
    shard_of,
    write_manifest,
)


def _parse(shard: str | None, d: str) -> tuple[int, int]:
    if shard is None:
        raise ExecuteError(f"{d}: is an unsharded run; merge takes the shards of one plan")
    i, _, n = shard.partition("/")
    return int(i), int(n)


def _plan_instances(
    d0: str, m0: RunManifest, plan: str | None, n_shards: int
) -> tuple[str, dict[int, list[InstanceRecord]]]:
    """The plan the shards came from (``plan`` or the first manifest's), checked against the manifests'
    plan hash, and its Instances by shard."""
    try:
        path = plan_of(d0, m0, plan)
        header, instances = load_instances(path, None)
    except PlanError as e:
        raise ExecuteError(f"merge: {e}") from None
    if header.plan_hash != m0.plan_hash:
        raise ExecuteError(
            f"merge: {path} is plan {header.plan_hash[:12]}, but the shards are results of plan {m0.plan_hash[:12]}"
        )
    by_shard: dict[int, list[InstanceRecord]] = {i: [] for i in range(n_shards)}
    for inst in instances:
        by_shard[shard_of(inst.instance_id, n_shards)].append(inst)
    return path, by_shard


def merge(dirs: Sequence[str], out: str, plan: str | None = None) -> Path:
    """Merge shard directories into ``out``; every row is checked against the plan (``plan``, or the one the
    manifests name) first."""
    manifests = _same_plan_and_model(dirs)
    seen = _all_shards(manifests)
    _check_rows_of_shards(manifests, plan, len(seen))
    return _write_merged(manifests, seen, Path(out))


def _same_plan_and_model(dirs: Sequence[str]) -> list[tuple[str, RunManifest]]:
    """The shards' manifests, refused unless they share the plan and the model's identity."""
    if not dirs:
        raise ExecuteError("merge: no results directories given")
    manifests: list[tuple[str, RunManifest]] = []
    for d in dirs:
        with reraised_as(ExecuteError):
            manifests.append((str(d), read_manifest(d)))
    d0, m0 = manifests[0]
    for d, m in manifests[1:]:
        if m.plan_hash != m0.plan_hash:
            raise ExecuteError(
                f"{d}: results of plan {m.plan_hash[:12]}, but {d0} is of plan {m0.plan_hash[:12]}; "
                f"merge only combines shards of one plan"
            )
        diff = [k for k in REUSE_KEYS if m.model.get(k) != m0.model.get(k)]
        if diff:
            k = diff[0]
            raise ExecuteError(f"{d}: model {k}={m.model.get(k)!r}, but {d0} has {m0.model.get(k)!r}")
    return manifests


def _all_shards(manifests: list[tuple[str, RunManifest]]) -> dict[int, str]:
    """Shard index -> its directory, refused unless the shards are i/n of one n, each once, none missing."""
    d0, m0 = manifests[0]
    seen: dict[int, str] = {}
    n_shards = None
    for d, m in manifests:
        i, n = _parse(m.shard, d)
        if n_shards is None:
            n_shards = n
        elif n != n_shards:
            raise ExecuteError(f"{d}: shard {m.shard}, but {d0} is shard {m0.shard}: different shard counts")
        if i in seen:
            raise ExecuteError(f"{d}: shard {m.shard} overlaps {seen[i]} (the same shard twice)")
        seen[i] = d
    assert n_shards is not None
    missing = sorted(set(range(n_shards)) - set(seen))
    if missing:
        raise ExecuteError(f"merge: missing shard(s) {', '.join(f'{i}/{n_shards}' for i in missing)}")
    return seen


def _check_rows_of_shards(manifests: list[tuple[str, RunManifest]], plan: str | None, n_shards: int) -> None:
    """Every row answers an Instance of its shard of the plan, once; every shard finished."""
    d0, m0 = manifests[0]
    import polars as pl

    plan_file, by_shard = _plan_instances(d0, m0, plan, n_shards)
    all_keys = []
    all_parts: list[Path] = []
    for d, m in manifests:
        i, _ = _parse(m.shard, d)
        parts = part_files(d)
        keys = read_row_keys(parts)
        try:  # every row answers an Instance of this shard of the plan, once
            check_rows(keys, plan_keys(by_shard[i]), plan_file, parts)
        except PlanError as e:
            raise ExecuteError(f"{e}; merge refuses {d}") from None
        if not m.finished or keys.height != len(by_shard[i]):
            raise ExecuteError(
                f"{d}: shard {m.shard} is unfinished ({keys.height} of {len(by_shard[i])} instances); rerun its "
                f"lmeval execute to complete it"
            )
        all_keys.append(keys.with_columns(pl.col(PART) + len(all_parts)))
        all_parts += parts
    try:  # and no Instance twice across the shards
        everything = plan_keys(x for i in sorted(by_shard) for x in by_shard[i])
        check_rows(pl.concat(all_keys), everything, plan_file, all_parts)
    except PlanError as e:
        raise ExecuteError(f"{e}; merge refuses it") from None


def _write_merged(manifests: list[tuple[str, RunManifest]], seen: dict[int, str], target: Path) -> Path:
    """The shards' parts and one manifest, into a new directory renamed into place (nothing half-written)."""
    m0 = manifests[0][1]
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ExecuteError(f"{target}: already exists and is not empty; merge writes a new directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.merge-", dir=target.parent))
    try:
        seq = 0
        for i in sorted(seen):
            for p in part_files(seen[i]):  # verified when its rows were read above; its checksum goes along
                shutil.copyfile(p, tmp / checksummed(f"part-{seq:06d}", part_sha256(p)))
                seq += 1
        stats: dict[str, int] = {}
        for _, m in manifests:
            for k, v in (m.stats or {}).items():
                stats[k] = stats.get(k, 0) + int(v)
        merged = replace(  # the first shard's plan, model, backend, engine args and versions (all checked equal)
            m0,
            shard=None,
            n_instances=sum(m.n_instances for _, m in manifests),
            started=min((m.started for _, m in manifests if m.started), default=None),
            finished=max((m.finished for _, m in manifests if m.finished), default=None),
            stats=stats,
            hardware=_hardware(manifests),
            execution={},
            platform={},
            numerics=_numerics(manifests),
        )
        write_manifest(tmp, merged)
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        if target.exists():
            target.rmdir()  # empty, checked above
        os.rename(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _numerics(manifests: list[tuple[str, RunManifest]]) -> Numerics:
    """Every shard's kernel paths; the most workers any shard had; the chunk size and the part size when all
    shards agree, else None."""
    out = Numerics(workers=max(m.numerics.workers for _, m in manifests))
    chunks = {m.numerics.chunk_size for _, m in manifests}
    out.chunk_size = chunks.pop() if len(chunks) == 1 else None
    parts = {m.numerics.part_size for _, m in manifests}
    out.part_size = parts.pop() if len(parts) == 1 else None
    for _, m in manifests:
        for p in m.numerics.kernel_paths:
            out.add(p)
    return out


def _hardware(manifests: list[tuple[str, RunManifest]]) -> dict[str, Any]:
    """The shards' machine when they all ran on one kind, else each shard's, by shard."""
    hws = [m.hardware for _, m in manifests]
    if all(h == hws[0] for h in hws):
        return hws[0]
    return {"shards": {str(m.shard): m.hardware for _, m in manifests}}
