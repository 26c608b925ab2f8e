"""``lmeval cache ls|prune``: what the result store holds and how to bound it (``executor/ANSWERSTORE.md``).

``describe`` sums the store up (entries, models, bytes on disk, oldest and newest use); ``prune`` removes the
entries used least recently until the store is at most ``max_bytes`` of answers, and those not used for
``max_age_s``; ``remove_all`` deletes the store's files (also a store this lmeval cannot read).
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from lmeval.executor.answerstore import DB_NAME, AnswerStore
from lmeval.executor.errors import ExecuteError

ENTRY_OVERHEAD = 200  # bytes an entry takes beyond its answer (key, model key, request, checksum, index)
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$", re.I)
_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$", re.I)


@dataclass(frozen=True)
class Summary:
    path: Path
    entries: int
    models: int
    answer_bytes: int  # what the entries hold (answers and keys)
    file_bytes: int  # the store's files on disk (database, write-ahead log)
    oldest_use: float | None
    newest_use: float | None

    def lines(self) -> list[str]:
        def day(t: float | None) -> str:
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"

        return [
            f"store: {self.path}",
            f"entries: {self.entries} answers of {self.models} model setting(s)",
            f"size: {human(self.file_bytes)} on disk ({human(self.answer_bytes)} of answers)",
            f"used: oldest {day(self.oldest_use)}, newest {day(self.newest_use)}",
        ]


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return f"{n} B"


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``100KiB``, ``1000`` (bytes) -> bytes; ExecuteError otherwise."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ExecuteError(f"--max-size {text!r}: expected a size such as 500M, 2G or 1000 (bytes)")
    return int(float(m.group(1)) * 1024 ** "_kmgt".index((m.group(2) or "_").lower()))


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``2w`` -> seconds; ExecuteError otherwise."""
    m = _AGE.match(text.strip())
    if not m:
        raise ExecuteError(f"--older-than {text!r}: expected an age such as 30d, 12h or 2w")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2).lower()]


def files_of(folder: Path) -> list[Path]:
    return [p for p in (folder / DB_NAME, folder / f"{DB_NAME}-wal", folder / f"{DB_NAME}-shm") if p.exists()]


def _open(folder: Path) -> AnswerStore:
    if not (folder / DB_NAME).exists():
        raise ExecuteError(f"{folder}: no result store here (nothing has been stored yet)")
    problems: list[str] = []
    store = AnswerStore.open(folder, problems.append)
    if store is None:
        raise ExecuteError(problems[0] if problems else f"{folder}: cannot open the result store")
    return store


def describe(folder: Path) -> Summary:
    store = _open(folder)
    try:
        n, models, size, lo, hi = store.con.execute(
            f"SELECT count(*), count(DISTINCT model_key), coalesce(sum(length(payload)), 0) + {ENTRY_OVERHEAD} "
            "* count(*), min(used), max(used) FROM answers"
        ).fetchone()
    finally:
        store.close()
    on_disk = sum(p.stat().st_size for p in files_of(folder))
    return Summary(store.path, int(n), int(models), int(size), on_disk, lo, hi)


def prune(folder: Path, max_bytes: int | None, max_age_s: float | None) -> int:
    """Remove entries not used for ``max_age_s``, then the least recently used beyond ``max_bytes`` of
    answers; return how many went. One transaction: a run reading the store meanwhile sees before or after."""
    store = _open(folder)
    removed = 0
    try:
        con = store.con
        con.execute("BEGIN IMMEDIATE")
        if max_age_s is not None:
            removed += con.execute("DELETE FROM answers WHERE used < ?", (time.time() - max_age_s,)).rowcount
        if max_bytes is not None:
            total = 0
            doomed = []
            for key, size in con.execute(
                f"SELECT key, length(payload) + {ENTRY_OVERHEAD} FROM answers ORDER BY used DESC, key"
            ):
                total += int(size)
                if total > max_bytes:
                    doomed.append((key,))
            con.executemany("DELETE FROM answers WHERE key=?", doomed)
            removed += len(doomed)
        con.execute("COMMIT")
        try:
            con.execute("VACUUM")  # give the space back (skipped while another run holds the store)
        except sqlite3.Error:
            pass
    except sqlite3.Error as e:
        raise ExecuteError(f"{store.path}: cannot prune ({' '.join(str(e).split())})") from None
    finally:
        store.close()
    return removed


def remove_all(folder: Path) -> int:
    """Delete the store's files; how many bytes were freed."""
    freed = 0
    for p in files_of(folder):
        freed += p.stat().st_size
        p.unlink()
    return freed
