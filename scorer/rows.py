"""Read a results directory's rows for scoring (the contract of ``plans.results.read_results``).

Same contract as ``plans.results.read_results`` (parts concatenated, columns cast to the results schema, an
instance occurring twice is an error), but faster for millions of rows: one lazy scan of only the columns
scoring needs, rows split by task, each task's rows sorted by (doc_id, idx) only when they are not already,
and duplicates found on those sorted integer keys ((task, doc_id, idx) identifies an instance:
``instance_id`` is a hash of them).
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from plans.records import instance_id_for
from plans.results import part_files, polars_schema
from scorer.errors import ScoreError

COLUMNS = ("task", "doc_id", "idx", "loglikelihood", "is_greedy", "response", "responses")


def read_rows(results_dir: str | os.PathLike[str]) -> dict[str, pl.DataFrame]:
    """Per task, its result rows sorted by (doc_id, idx)."""
    schema = {k: v for k, v in polars_schema().items() if k in COLUMNS}
    parts = part_files(results_dir)
    if not parts:
        return {}
    try:
        df = (
            pl.concat([pl.scan_parquet(p).select(list(schema)) for p in parts], how="vertical")
            .cast(schema)  # type: ignore[arg-type]
            .collect()
        )
    except pl.exceptions.PolarsError as e:
        raise ScoreError(
            f"{_bad_part(parts, schema) or results_dir}: unreadable results part ({type(e).__name__}: {e})"
        ) from None
    out: dict[str, pl.DataFrame] = {}
    for (task,), rows in df.partition_by("task", as_dict=True, maintain_order=True).items():
        dd, di = pl.col("doc_id").diff(), pl.col("idx").diff()
        strictly_sorted = ((dd > 0) | ((dd == 0) & (di > 0))).fill_null(True).all()
        if not rows.select(strictly_sorted).item():
            rows = rows.sort(["doc_id", "idx"])
        same = (pl.col("doc_id") == pl.col("doc_id").shift(1)) & (pl.col("idx") == pl.col("idx").shift(1))
        dup = rows.select(same.fill_null(False).arg_true())
        if dup.height:
            r = rows.row(int(dup.item(0, 0)), named=True)
            n = rows.filter((pl.col("doc_id") == r["doc_id"]) & (pl.col("idx") == r["idx"])).height
            iid = instance_id_for(str(task), r["doc_id"], r["idx"])
            raise ScoreError(
                f"{results_dir}: instance {iid} ({task} doc {r['doc_id']} idx {r['idx']}) appears {n} times"
            )
        out[str(task)] = rows
    return out


def _bad_part(parts: list[Path], schema: dict[str, pl.DataType]) -> str | None:
    """The first part that cannot be read on its own (only called after reading them together failed)."""
    for p in parts:
        try:
            pl.scan_parquet(p).select(list(schema)).cast(schema).collect()  # type: ignore[arg-type]
        except pl.exceptions.PolarsError:
            return str(p)
    return None
