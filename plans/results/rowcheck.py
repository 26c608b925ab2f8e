"""The rule every result row obeys: it is the answer to one Instance of the plan it is scored under.

A row carries its Instance's key columns (``KEY_COLUMNS``). Wherever rows meet a plan (``score``, resume
of an ``execute``, ``merge`` of shards, ``execute --reuse`` of an older run) each row must equal, column by
column, the plan's Instance with the same ``instance_id``, and each Instance has at most one row. A row whose
``request_hash`` differs answered another request (parts copied from a 5-shot run under a 0-shot
manifest, a gap filled from another plan); a row whose id the plan lacks, or a second row of one
Instance, is refused too. The error is one line naming the part file and the Instance.

Both frames are polars DataFrames; rows carry a ``part`` column (the index of the file each came from).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from lmeval.plans.errors import PlanError
from lmeval.plans.plan import InstanceRecord, shard_of
from lmeval.plans.results.manifest import PART, polars_schema, read_parts

if TYPE_CHECKING:
    import polars as pl

KEY_COLUMNS: tuple[str, ...] = ("instance_id", "task", "doc_id", "idx", "request_type", "request_hash")


class RowMismatchError(PlanError):
    """A result row that is not the answer to the plan's Instance (or a second row of one Instance)."""


def key_schema() -> dict[str, Any]:
    return {k: v for k, v in polars_schema().items() if k in KEY_COLUMNS}


def plan_keys(instances: Iterable[InstanceRecord]) -> pl.DataFrame:
    """The key columns of a plan's Instances (or of one shard's)."""
    import polars as pl

    cols: dict[str, list[Any]] = {k: [] for k in KEY_COLUMNS}
    for inst in instances:
        cols["instance_id"].append(inst.instance_id)
        cols["task"].append(inst.task)
        cols["doc_id"].append(inst.doc_id)
        cols["idx"].append(inst.idx)
        cols["request_type"].append(inst.request_type)
        cols["request_hash"].append(inst.request_hash)
    return pl.DataFrame(cols, schema=key_schema())


def shard_keys(plan: pl.DataFrame, shard: str | None) -> pl.DataFrame:
    """The rows of ``plan`` (key columns) that are Instances of ``shard`` (a manifest's ``"I/N"``, already
    checked by ``plans.results.shard_problem``; None: all): ``plans.records.shard_of``, the split ``execute
    --shard`` runs, so a directory whose manifest claims a shard is checked against that shard's Instances
    wherever its rows meet the plan (resume, merge, score)."""
    import polars as pl

    if shard is None:
        return plan
    i, _, n = shard.partition("/")
    mask = [shard_of(x, int(n)) == int(i) for x in plan["instance_id"].to_list()]
    return plan.filter(pl.Series(mask, dtype=pl.Boolean))


def read_row_keys(parts: Sequence[str | os.PathLike[str]]) -> pl.DataFrame:
    """The key columns of every row of ``parts``, with the index into ``parts`` of the file each came from
    (column ``part``). Raises PlanError naming the part when one cannot be read or lacks a column."""
    return read_parts(parts, KEY_COLUMNS)


def _instance(r: dict[str, Any]) -> str:
    return f"instance {r['instance_id']} ({r['task']} doc {r['doc_id']} idx {r['idx']})"


def check_rows(rows: pl.DataFrame, plan: pl.DataFrame, plan_name: str, parts: Sequence[Any]) -> None:
    """Every row equals the plan's Instance of its ``instance_id`` in every key column, once.

    ``rows``: ``KEY_COLUMNS`` + ``part`` (an index into ``parts``, the part files); ``plan``: ``KEY_COLUMNS``
    of the Instances these rows may answer (the whole plan, or the shard a directory holds); ``plan_name``
    names it in errors. Raises RowMismatchError (one line: part file, Instance, what differs)."""
    import polars as pl

    if rows.height == 0:
        return
    _check_no_null_ids(rows, parts)
    cols = list(KEY_COLUMNS)
    if rows.height == plan.height and rows.select(cols).equals(plan.select(cols)):
        return  # the usual case, when the caller lines both up (the scorer does): row i is Instance i
    order = [PART, "task", "doc_id", "idx"]  # the first offender in part-file order, whoever sorted the rows
    dup = rows.filter(pl.col("instance_id").is_duplicated()).sort(order)
    if dup.height:
        first = dup.row(0, named=True)
        where = [parts[i] for i in dup.filter(pl.col("instance_id") == first["instance_id"])[PART].to_list()]
        also = "twice in that part" if len(set(where)) == 1 else f"also in {where[1]}"
        raise RowMismatchError(
            f"{where[0]}: {_instance(first)} has a row {also}; a results directory holds each Instance once "
            f"(a duplicated part?)"
        )
    joined = rows.join(plan, on="instance_id", how="left", suffix="_plan")
    unknown = joined.filter(pl.col("task_plan").is_null()).sort(order)
    if unknown.height:
        r = unknown.row(0, named=True)
        raise RowMismatchError(
            f"{parts[r[PART]]}: the row of {_instance(r)} is not an Instance of plan {plan_name} "
            f"({unknown.height} such rows; results of another plan, or of another shard?)"
        )
    for col in KEY_COLUMNS[1:]:
        bad = joined.filter(pl.col(col).ne_missing(pl.col(f"{col}_plan"))).sort(order)
        if bad.height:
            r = bad.row(0, named=True)
            raise RowMismatchError(
                f"{parts[r[PART]]}: the row of {_instance(r)} has {col} {_short(r[col])}, but that Instance in plan "
                f"{plan_name} has {_short(r[f'{col}_plan'])} ({bad.height} such rows; results of another plan?)"
            )


def _check_no_null_ids(rows: pl.DataFrame, parts: Sequence[Any]) -> None:
    """Every row names its Instance: a null ``instance_id`` is refused, naming the part and the first such row."""
    import polars as pl

    null = rows.filter(pl.col("instance_id").is_null())
    if null.height:
        r = null.sort([PART, "task", "doc_id", "idx"]).row(0, named=True)
        raise RowMismatchError(
            f"{parts[r[PART]]}: field instance_id is null in {null.height} row(s) (first: task {r['task']} doc "
            f"{r['doc_id']} idx {r['idx']}); every result row names its Instance"
        )


def _short(v: Any) -> str:
    if isinstance(v, str) and len(v) == 64:
        return repr(v[:12] + "…")
    return repr(v)
