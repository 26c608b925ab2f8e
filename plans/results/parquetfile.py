"""Reading one of the scored run's Parquet files (samples.parquet, repeats.parquet) as untrusted input: a
regular file under its size limit, parsed by polars, its key-value metadata beside the frame; anything else
is one ``PlanError`` naming the file."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from lmeval.plans.errors import PlanError
from lmeval.plans.limits import InputError, open_regular

if TYPE_CHECKING:
    import polars as pl


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """``path``'s bytes: a regular file of at most ``limit`` bytes (``what`` names it in the error)."""
    try:
        with open_regular(path, max_bytes=limit, what=what) as f:
            return f.read()
    except InputError as e:
        raise PlanError(str(e)) from None
    except OSError as e:
        raise PlanError(f"{path}: cannot read {what}: {e.strerror or e}") from None


def read_parquet(path: Path, limit: int, what: str) -> tuple[dict[str, str], pl.DataFrame]:
    """``path`` as Parquet: its key-value metadata and its frame."""
    import polars as pl

    buf = io.BytesIO(read_bounded(path, limit, what))
    try:
        meta = pl.read_parquet_metadata(buf)
        buf.seek(0)
        frame = pl.read_parquet(buf)
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise PlanError(f"{path}: not a Parquet file ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
    return meta, frame
