"""A results directory on disk: manifest, atomic Parquet parts, resume state and a run lock.

Parts are written to a hidden temporary file, fsynced and renamed to ``part-NNNNNN.parquet``: a part is
either complete or absent, whenever the process dies. Resume reads the ``instance_id`` column of the parts
already there. Leftover temporary files from a killed run are removed on the next start.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from executor import faults
from executor.errors import ExecuteError
from plans.atomic import os_error_of
from plans.errors import PlanError
from plans.results import MANIFEST, RESULT_COLUMNS, RunManifest, part_files, polars_schema, read_manifest

LOCK = ".lock"
_PART_RE = re.compile(r"part-(\d+)(?:-.*)?\.parquet$")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rows_frame(rows: Sequence[dict[str, Any]]) -> Any:
    import polars as pl

    cols = {name: [r.get(name) for r in rows] for name in RESULT_COLUMNS}
    return pl.DataFrame(cols, schema=polars_schema())


def write_parquet_atomic(df: Any, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        df.write_parquet(tmp, compression="zstd", statistics=True)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        faults.point("part-tmp")
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        why = os_error_of(e)  # disk full, read-only: one line; earlier parts stay as they are
        if why is not None:
            raise ExecuteError(f"{target}: cannot write: {why}; nothing was replaced") from None
        raise


class ResultsDir:
    """One results directory, locked for the lifetime of this object's ``open()``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock: IO[str] | None = None
        self._seq = 0

    # -- checks (no writes) -------------------------------------------------------------------------

    def existing_manifest(self) -> RunManifest | None:
        if not (self.path / MANIFEST).exists():
            if self.path.exists() and not self.path.is_dir():
                raise ExecuteError(f"{self.path}: exists and is not a directory")
            if part_files(self.path) if self.path.is_dir() else []:
                raise ExecuteError(f"{self.path}: has result parts but no {MANIFEST}; refusing to write there")
            return None
        try:
            return read_manifest(self.path)
        except PlanError as e:
            raise ExecuteError(str(e)) from None

    def done_ids(self) -> set[str]:
        import polars as pl

        ids: set[str] = set()
        for p in part_files(self.path):
            try:
                col = pl.read_parquet(p, columns=["instance_id"])["instance_id"]
            except Exception as e:
                raise ExecuteError(f"{p}: unreadable result part ({type(e).__name__}: {e})") from None
            ids.update(col.to_list())
        return ids

    # -- writes ----------------------------------------------------------------------------------------

    def open(self) -> None:
        """Create the directory, take the run lock, remove temporary leftovers of killed runs."""
        self.path.mkdir(parents=True, exist_ok=True)
        f = open(self.path / LOCK, "a")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise ExecuteError(f"{self.path}: another lmeval execute is writing to this directory") from None
        self._lock = f
        for tmp in self.path.glob(".part-*.tmp"):
            tmp.unlink(missing_ok=True)
        for tmp in self.path.glob(f".{MANIFEST}.*.tmp"):
            tmp.unlink(missing_ok=True)
        seqs = [int(m.group(1)) for p in part_files(self.path) if (m := _PART_RE.match(p.name))]
        self._seq = max(seqs, default=-1) + 1

    def close(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def write_manifest(self, manifest: RunManifest) -> None:
        from plans.results import write_manifest

        write_manifest(self.path, manifest)
        faults.point("manifest")

    def write_part(self, rows: Sequence[dict[str, Any]]) -> Path:
        target = self.path / f"part-{self._seq:06d}.parquet"
        self._seq += 1
        write_parquet_atomic(rows_frame(rows), target)
        faults.point("part")
        return target
