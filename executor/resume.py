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

from lmeval.executor.answerkey import request_part
from lmeval.executor.errors import ExecuteError
from lmeval.executor.instances import load_instances, parse_shard
from lmeval.executor.modelconf import REUSE_KEYS
from lmeval.executor.requests import is_sampled
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


def reuse_table(reuse: str, ident: dict[str, Any], model_key: str, seed: int) -> dict[str, dict[str, Any]]:
    """The old run's answers by the request part of their answer key (``executor/answerkey.py``), after checking
    that its model is this run's (its model key, where its manifest records one; else its identity) and that
    every row answers the Instance of its own plan. A sampled generation of a run that did not record its seed
    is left out (its seed cannot be checked)."""
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
    old_key = (manifest.store or {}).get("model_key")
    if old_key and old_key != model_key:
        raise ExecuteError(
            f"--reuse {reuse}: its results come from another model setting (model key {str(old_key)[:12]}, this "
            f"run {model_key[:12]}: weights, versions, dtype or engine settings differ; executor/ANSWERSTORE.md)"
        )
    old_seed = (manifest.store or {}).get("seed")
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
    by_id = {i.instance_id: i for i in old_instances}
    table: dict[str, dict[str, Any]] = {}
    for row in df.iter_rows(named=True):
        inst = by_id[row["instance_id"]]
        if inst.request_type == "generate_until" and is_sampled(inst.generation_kwargs) and old_seed != seed:
            continue  # another (or an unrecorded) engine seed: another sample
        table.setdefault(request_part(inst, seed), row)
    return table


def reuse_rows(
    table: dict[str, dict[str, Any]], todo: Sequence[InstanceRecord], seed: int
) -> Iterator[tuple[InstanceRecord, dict[str, Any]]]:
    """The rows of ``table`` that answer Instances of ``todo`` (the same request part: request hash, repeats,
    seed), as this plan's rows."""
    for inst in todo:
        old = table.get(request_part(inst, seed))
        if old is not None:
            yield inst, plan_row(inst, old, "reused")
