"""``repeats.parquet``: every repeat's filtered answer and its scores (``sample_scores``, plans/vocab/samplescores.py),
beside samples.parquet in a scored results directory (design note: plans/scored/SCORED.md, "Every sample scored").

One row per task, document, filter and repeat: ``REPEAT_COLUMNS`` (``task``, ``doc_id``, ``filter``,
``repeat`` = the response's position 0..N-1 in the Instance's responses, ``filtered`` = that response through
the filter's steps before its reducer, ``take_first``/``majority_vote``), then one Float64 column per metric
(the repeat's own score). Written only for plans with ``sample_scores``; a scored run without it has no file.
Versioned on its own (key-value metadata ``lmeval-repeats``), so readers of samples.parquet are unaffected.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from lmeval.common import write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.results import read_parquet

if TYPE_CHECKING:
    import polars as pl

REPEATS_PARQUET = "repeats.parquet"
REPEATS_VERSION = 1
REPEATS_VERSION_KEY = "lmeval-repeats"
MAX_REPEATS_BYTES = 2 << 30
REPEAT_COLUMNS: dict[str, str] = {
    "task": "String",
    "doc_id": "Int64",
    "filter": "String",
    "repeat": "Int64",
    "filtered": "String",
}


def write_repeats(results_dir: str | os.PathLike[str], frame: pl.DataFrame | None) -> None:
    """Write ``frame`` atomically; None removes a file an earlier scoring left (the plan asks for none)."""
    path = Path(results_dir) / REPEATS_PARQUET
    if frame is None:
        if path.is_file():
            path.unlink()
        return
    meta = {REPEATS_VERSION_KEY: str(REPEATS_VERSION)}
    write_atomic(path, lambda f: frame.write_parquet(f, compression="lz4", statistics=False, metadata=meta))


def read_repeats(results_dir: str | os.PathLike[str]) -> pl.DataFrame | None:
    """The file, checked (a regular Parquet file of this version with ``REPEAT_COLUMNS``); None when the run
    has none. Anything else is one ``PlanError`` naming the file."""
    import polars as pl

    path = Path(results_dir) / REPEATS_PARQUET
    if not os.path.lexists(path):
        return None
    meta, frame = read_parquet(path, MAX_REPEATS_BYTES, REPEATS_PARQUET)
    version = meta.get(REPEATS_VERSION_KEY)
    if version != str(REPEATS_VERSION):
        raise PlanError(f"{path}: {REPEATS_PARQUET} version {str(version)[:20]!r}; this lmeval reads {REPEATS_VERSION}")
    for col, dtype in REPEAT_COLUMNS.items():
        if frame.schema.get(col) != getattr(pl, dtype):
            raise PlanError(f"{path}: column {col!r} missing or not {dtype}")
    return frame
