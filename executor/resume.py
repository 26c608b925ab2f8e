"""What a run takes from results already on disk: resuming its own directory, and ``--reuse`` of another's.

A directory is resumed only by the same plan, shard and model; an earlier run's rows are reused only when
its model is this run's and every row answers the Instance of its own plan (``plans.rowcheck``), since a
row's request hash is what reuse trusts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lmeval.executor.errors import ExecuteError
from lmeval.executor.instances import load_instances, parse_shard
from lmeval.executor.modelconf import REUSE_KEYS
from lmeval.executor.storeuse import plan_row
from lmeval.plans import (
    InstanceRecord,
    PlanError,
    PlanHeader,
    RunManifest,
    check_rows,
    open_run,
    plan_keys,
    plan_named,
    read_row_keys,
)


def check_resume(
    existing: RunManifest, header: PlanHeader, shard: str | None, ident: dict[str, Any], out_dir: Path
) -> None:
    if existing.plan_hash != header.plan_hash:
        raise ExecuteError(
            f"{out_dir}: holds results of another plan ({existing.plan_hash[:12]}, this is "
            f"{header.plan_hash[:12]}); choose another --out"
        )
    _check_plan_path(existing, out_dir)
    if existing.shard != shard:
        raise ExecuteError(f"{out_dir}: holds shard {existing.shard or 'all'}, this run is {shard or 'all'}")
    old = existing.model or {}
    diff = [k for k in REUSE_KEYS if k in old and old.get(k) != ident.get(k)]
    if diff:
        k = diff[0]
        raise ExecuteError(
            f"{out_dir}: was run with model {k}={old.get(k)!r}, this run has {ident.get(k)!r}; choose another --out"
        )


def _check_plan_path(existing: RunManifest, out_dir: Path) -> None:
    """The manifest's ``plan_path``, when it names something, names this directory's plan: a regular file
    whose header has the manifest's ``plan_hash`` (not ``/dev/zero``, a FIFO or another plan). A plan moved
    away since is fine (the hash decides what the directory holds)."""
    from lmeval.plans import read_header

    if not existing.plan_path:
        return
    p = Path(plan_named(out_dir, existing.plan_path))
    if not os.path.lexists(p):
        return
    try:
        found = read_header(p).plan_hash
    except PlanError as e:
        raise ExecuteError(f"{out_dir}: manifest plan_path {p} is not its plan ({e}); cannot resume") from None
    if found != existing.plan_hash:
        raise ExecuteError(
            f"{out_dir}: manifest plan_path {p} names another plan ({found[:12]}, the manifest's is "
            f"{existing.plan_hash[:12]}); cannot resume"
        )


def reuse_table(reuse: str, ident: dict[str, Any]) -> Any:
    """The old run's rows by request hash, after checking that its model is this run's and that every row
    answers the Instance of its own plan."""
    try:
        run = open_run(reuse, scored=False)  # results of another run, scored or not
    except PlanError as e:
        raise ExecuteError(f"--reuse {reuse}: {e}") from None
    manifest = run.manifest
    old = manifest.model or {}
    diff = [k for k in REUSE_KEYS if old.get(k) != ident.get(k)]
    if diff:
        k = diff[0]
        raise ExecuteError(
            f"--reuse {reuse}: its results come from model {k}={old.get(k)!r}, this run has {ident.get(k)!r}"
        )
    try:
        old_plan = run.plan_file()
        old_header, old_instances = load_instances(old_plan, parse_shard(manifest.shard))
        if old_header.plan_hash != manifest.plan_hash:
            raise PlanError(f"{old_plan} is not the plan its results came from ({manifest.plan_hash[:12]})")
        parts = run.parts()
        check_rows(read_row_keys(parts), plan_keys(old_instances), old_plan, parts)
        df = run.rows()
    except PlanError as e:
        raise ExecuteError(f"--reuse {reuse}: {e}") from None
    return df.unique(subset=["request_hash"], keep="first", maintain_order=True)


def reuse_rows(table: Any, todo: Sequence[InstanceRecord]) -> Iterator[tuple[InstanceRecord, dict[str, Any]]]:
    """The rows of ``table`` that answer Instances of ``todo`` (same request hash), as this plan's rows."""
    import polars as pl

    hashes = {i.request_hash for i in todo if i.request_hash}
    if not hashes or table.height == 0:
        return
    sub = table.filter(pl.col("request_hash").is_in(list(hashes)))
    by_hash = {r["request_hash"]: r for r in sub.iter_rows(named=True)}
    for inst in todo:
        old = by_hash.get(inst.request_hash)
        if old is None:
            continue
        yield inst, plan_row(inst, old, "reused")
