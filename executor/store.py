"""A results directory on disk: manifest, atomic Parquet parts, resume state and a run lock.

Parts are written to a hidden temporary file, fsynced and renamed to ``part-NNNNNN-s<sha256>.parquet`` (its
content checksum, ``plans/results/partsum.py``): a part is either complete or absent, whenever the process dies. One
writer per directory: the lock (flock on an open descriptor of the directory itself, and of ``.lock`` in it)
is taken before the directory is read; deleting ``.lock`` under a running execute does not let a second one
in (the directory's lock stays). Resume reads the key columns of the parts already there and checks every row
against the plan (``plans.rowcheck``). Leftover temporary files from a killed run are removed on the next start.
``PartWriter`` turns a stream of result rows into parts.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from lmeval.common import file_sha256, os_error_of
from lmeval.executor import faults
from lmeval.executor.errors import ExecuteError
from lmeval.executor.progress import Progress
from lmeval.plans import (
    MANIFEST,
    RESULT_COLUMNS,
    PlanError,
    RunManifest,
    check_rows,
    checksummed,
    part_files,
    polars_schema,
    read_manifest,
    read_row_keys,
)

LOCK = ".lock"
FLUSH_SECONDS = 30.0
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


def write_parquet(df: Any, dest: Any) -> None:
    """A part's Parquet bytes: zstd, statistics, and page checksums (pyarrow's ``write_page_checksum``)."""
    df.write_parquet(
        dest, compression="zstd", statistics=True, use_pyarrow=True, pyarrow_options={"write_page_checksum": True}
    )


def write_parquet_atomic(df: Any, directory: Path, stem: str) -> Path:
    """Write ``df`` as the part ``stem`` of ``directory``, named with its content's sha256
    (``plans/results/partsum.py``),
    atomically (temporary file, fsync, one rename); returns the part's path."""
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.parquet.", suffix=".tmp", dir=directory)
    os.close(fd)
    target = directory / f"{stem}.parquet"
    try:
        write_parquet(df, tmp)
        with open(tmp, "rb") as f:
            digest = file_sha256(f)
            os.fsync(f.fileno())
        target = directory / checksummed(stem, digest)
        faults.point("part-tmp")
        os.replace(tmp, target)
        fsync_dir(target.parent)
        return target
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
    """One results directory with one writer: ``lock()`` is taken before anything in it is read (manifest,
    done rows), so two executes on one directory never both see it unfinished and both write."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock: IO[str] | None = None
        self._dir_fd: int | None = None  # the directory itself, flocked: cannot be deleted from under the run
        self._created: Path | None = None  # the topmost directory lock() created, removed if nothing is written
        self._new_lock_file = False  # lock() created the lock file: removed too if nothing is written
        self._wrote = False
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

    def done_ids(self, plan: Any | None = None, plan_name: str = "") -> set[str]:
        """Instance ids with a row here. With ``plan`` (``plans.rowcheck.plan_keys`` of the Instances this
        directory answers), every row is first checked against it (``plans.rowcheck.check_rows``)."""
        parts = part_files(self.path)
        keys = read_row_keys(parts)
        if plan is not None:
            check_rows(keys, plan, plan_name, parts)
        return set(keys["instance_id"].to_list())

    # -- writes ----------------------------------------------------------------------------------------

    def lock(self) -> None:
        """Take the directory's writer lock (creating the directory). A second writer gets a one-line
        ExecuteError at once; nothing of the directory has been read before this."""
        if self.path.exists() and not self.path.is_dir():
            raise ExecuteError(f"{self.path}: exists and is not a directory")
        top = self.path
        while not top.parent.exists() and top.parent != top:
            top = top.parent
        created = None if self.path.exists() else top
        new_lock_file = not (self.path / LOCK).exists()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as e:
            raise ExecuteError(f"{self.path}: cannot create or lock the results directory ({e.strerror})") from None
        f: IO[str] | None = None
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            f = open(self.path / LOCK, "a")  # noqa: SIM115 - held until close()
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(dir_fd)
            if f is not None:
                f.close()
            if not isinstance(e, BlockingIOError):
                raise ExecuteError(f"{self.path}: cannot create or lock the results directory ({e.strerror})") from None
            raise ExecuteError(
                f"{self.path}: another lmeval execute is writing to this directory; wait for it to finish "
                f"(rerunning then resumes) or choose another --out"
            ) from None
        self._lock = f
        self._dir_fd = dir_fd
        self._created = created
        self._new_lock_file = new_lock_file
        faults.point("locked")

    def open(self) -> None:
        """After the checks passed (lock held): remove temporary leftovers of killed runs, number new parts."""
        if self._lock is None:
            self.lock()
        self._wrote = True
        for tmp in self.path.glob(".part-*.tmp"):
            tmp.unlink(missing_ok=True)
        for tmp in self.path.glob(f".{MANIFEST}.*.tmp"):
            tmp.unlink(missing_ok=True)
        seqs = [int(m.group(1)) for p in part_files(self.path) if (m := _PART_RE.match(p.name))]
        self._seq = max(seqs, default=-1) + 1

    def close(self) -> None:
        """Release the lock; a directory (or lock file) this run created and never wrote to is removed again."""
        if self._lock is None:
            return
        if self._new_lock_file and not self._wrote:  # still locked: no one else is in there
            (self.path / LOCK).unlink(missing_ok=True)
        if self._created is not None and not self._wrote:
            d = self.path
            while True:
                try:
                    d.rmdir()
                except OSError:
                    break
                if d == self._created:
                    break
                d = d.parent
        fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
        self._lock.close()
        self._lock = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)  # releases the directory's flock
            self._dir_fd = None

    def write_manifest(self, manifest: RunManifest) -> None:
        from lmeval.plans import write_manifest

        write_manifest(self.path, manifest)
        faults.point("manifest")

    def write_part(self, rows: Sequence[dict[str, Any]]) -> Path:
        stem = f"part-{self._seq:06d}"
        self._seq += 1
        target = write_parquet_atomic(rows_frame(rows), self.path, stem)
        faults.point("part")
        return target


class PartWriter:
    """The sink of a single-process run (``jobloop.Sink``): buffers result rows and writes a part every
    ``part_size`` rows, and whatever is buffered once its oldest row has waited ``FLUSH_SECONDS`` (so a slow
    generation phase still persists its progress)."""

    def __init__(self, store: ResultsDir, part_size: int, progress: Progress) -> None:
        self.store = store
        self.part_size = part_size
        self.progress = progress
        self.rows: list[dict[str, Any]] = []
        self.oldest = 0.0

    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None:
        if not self.rows:
            self.oldest = time.monotonic()
        self.rows.extend(rows)
        self.progress.advance(len(rows), tokens)
        if time.monotonic() - self.oldest > FLUSH_SECONDS:
            self.flush()
        elif len(self.rows) >= self.part_size:
            self.flush(full_only=True)

    def flush(self, full_only: bool = False) -> None:
        while len(self.rows) >= (self.part_size if full_only else 1):
            chunk, self.rows = self.rows[: self.part_size], self.rows[self.part_size :]
            self.store.write_part(chunk)
        if self.rows:
            self.oldest = time.monotonic()
