"""The result store: every answer an execute computed, keyed by ``executor/answerkey.py``, in one SQLite file
(design and fault rules: ``executor/ANSWERSTORE.md``).

``AnswerStore.open`` gives a store or None (off, or unusable: one warning line). ``get`` returns the answers a
store holds for some keys, each verified (its checksum, and the model key and request it was stored for); an
entry that fails is reported in one line, dropped and recomputed, never served. ``put`` writes a batch in one
transaction; a write that fails (disk full, read-only, locked too long) is one warning line and the store takes
no more writes in this run. ``stored_request_ids`` answers "which of these Instances are already answered".
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from lmeval.common import file_sha256
from lmeval.executor import faults
from lmeval.executor.answerkey import answer_key
from lmeval.plans import InstanceRecord

FORMAT_VERSION = 1  # the layout of the file; a store of another version is not used (one warning line)
DB_NAME = "answers.sqlite"
STORE_ENV = "LMEVAL_STORE_DIR"  # moves the default store (the tests give each test its own)
OFF = "off"
BUSY_MS = 30_000  # how long a writer waits for another's transaction
# the answer columns of a result row (the rest, instance_id ... request_hash and source, are the plan's)
ANSWER_COLUMNS = ("loglikelihood", "is_greedy", "n_continuation_tokens", "response", "responses", "finish_reason",
                  "reasoning_tokens", "thinking_forced")  # fmt: skip

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model_key TEXT NOT NULL, request TEXT NOT NULL, "
    "payload BLOB NOT NULL, checksum TEXT NOT NULL, created REAL NOT NULL, used REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS file_hashes (path TEXT PRIMARY KEY, stat TEXT NOT NULL, sha256 TEXT NOT NULL)",
)


def default_location() -> Path:
    """``$LMEVAL_STORE_DIR``, else ``$LMEVAL_CACHE/store`` (default ``~/.cache/lmeval/store``)."""
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env)
    root = os.environ.get("LMEVAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lmeval")
    return Path(root) / "store"


def store_location(setting: str | None) -> Path | None:
    """Where ``run.store`` puts the store: None (unset) the default, ``off`` none, else that folder."""
    if setting is None or setting == "":
        return default_location()
    if setting == OFF:
        return None
    return Path(setting)


def warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr)


def checksum(key: str, model_key: str, request: str, payload: bytes) -> str:
    h = hashlib.sha256(f"{key}\0{model_key}\0{request}\0".encode())
    h.update(payload)
    return h.hexdigest()


def encode_answer(row: Mapping[str, Any]) -> bytes:
    return bytes(msgpack.packb({c: row.get(c) for c in ANSWER_COLUMNS}, use_bin_type=True))


def decode_answer(payload: bytes) -> dict[str, Any] | None:
    try:
        d = msgpack.unpackb(payload, raw=False)
    except Exception:  # noqa: BLE001 - bytes that are no answer: the entry is bad
        return None
    if not isinstance(d, dict) or set(d) != set(ANSWER_COLUMNS):
        return None
    return d


@dataclass(frozen=True)
class Entry:
    """One answer to store: its key, the model key and request part it answers, and the result row."""

    key: str
    model_key: str
    request: str
    row: Mapping[str, Any]


class AnswerStore:
    """One store file, opened for one run (or one ``lmeval cache`` command)."""

    def __init__(self, path: Path, con: sqlite3.Connection, say: Callable[[str], None]) -> None:
        self.path = path
        self.con = con
        self.say = say
        self.writable = True
        self.written = 0

    @classmethod
    def open(cls, folder: Path | None, say: Callable[[str], None] = warn, create: bool = True) -> AnswerStore | None:
        """The store in ``folder`` (created when missing, unless not ``create``), or None: off, missing, or
        unusable (one line said why)."""
        if folder is None:
            return None
        path = folder / DB_NAME
        if not create and not path.exists():
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as e:
            say(f"result store {path}: cannot open ({_why(e)}); answers are computed and not stored")
            return None
        try:
            con.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("BEGIN IMMEDIATE")
            for stmt in _SCHEMA:
                con.execute(stmt)
            row = con.execute("SELECT value FROM meta WHERE name='format_version'").fetchone()
            if row is None:
                con.execute("INSERT INTO meta VALUES ('format_version', ?)", (str(FORMAT_VERSION),))
            con.execute("COMMIT")
        except sqlite3.Error as e:
            con.close()
            say(f"result store {path}: unreadable ({_why(e)}); not used (`lmeval cache prune --all` clears it)")
            return None
        found = row[0] if row is not None else str(FORMAT_VERSION)
        if found != str(FORMAT_VERSION):
            con.close()
            say(
                f"result store {path}: format version {found}, this lmeval uses {FORMAT_VERSION}; not used "
                f"(another lmeval's store: `lmeval cache prune --all` clears it)"
            )
            return None
        return cls(path, con, say)

    def close(self) -> None:
        self.con.close()

    # -- reads ----------------------------------------------------------------------------------------

    def get(self, wanted: Mapping[str, tuple[str, str]]) -> dict[str, dict[str, Any]]:
        """The verified answers of ``wanted`` (key -> (model key, request part)) the store holds. An entry
        whose checksum fails, or that was stored for another model or request, is dropped (one line for all)."""
        found: dict[str, dict[str, Any]] = {}
        bad: list[str] = []
        try:
            for chunk in _chunks(list(wanted), 500):
                marks = ",".join("?" * len(chunk))
                rows = self.con.execute(
                    f"SELECT key, model_key, request, payload, checksum FROM answers WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, mkey, request, payload, summed in rows:
                    answer = decode_answer(payload) if isinstance(payload, bytes) else None
                    ok = (mkey, request) == wanted[key] and summed == checksum(key, mkey, request, bytes(payload))
                    if ok and answer is not None:
                        found[key] = answer
                    else:
                        bad.append(key)
        except sqlite3.Error as e:
            self.say(f"result store {self.path}: cannot read ({_why(e)}); every answer is computed")
            return {}
        if bad:
            self.say(
                f"result store {self.path}: {len(bad)} entr{'y' if len(bad) == 1 else 'ies'} failed verification "
                f"(changed bytes, or stored for another model or request; first {bad[0][:12]}); not served, recomputed"
            )
            self._drop(bad)
        return found

    def _drop(self, keys: Sequence[str]) -> None:
        try:
            self.con.execute("BEGIN IMMEDIATE")
            self.con.executemany("DELETE FROM answers WHERE key=?", [(k,) for k in keys])
            self.con.execute("COMMIT")
        except sqlite3.Error:
            self._rollback()

    # -- writes ---------------------------------------------------------------------------------------

    def put(self, entries: Iterable[Entry]) -> None:
        """Store ``entries`` in one transaction (an answer already there stays: the first writer wins)."""
        if not self.writable:
            return
        now = time.time()
        rows = []
        for e in entries:
            payload = encode_answer(e.row)
            rows.append((e.key, e.model_key, e.request, payload, checksum(e.key, e.model_key, e.request, payload), now))
        if not rows:
            return
        try:
            self.con.execute("BEGIN IMMEDIATE")
            self.con.executemany("INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 [(*r, now) for r in rows])  # fmt: skip
            faults.point("store-write")  # the batch is in the transaction, not committed
            self.con.execute("COMMIT")
            self.written += len(rows)
        except sqlite3.Error as e:
            self._rollback()
            self.writable = False
            self.say(
                f"result store {self.path}: cannot write ({_why(e)}); this run's answers are not stored "
                f"(its results directory is complete)"
            )

    def touch(self, keys: Sequence[str]) -> None:
        """Mark entries as used now (``prune --older-than`` keeps what runs still read)."""
        if not self.writable or not keys:
            return
        try:
            self.con.execute("BEGIN IMMEDIATE")
            now = time.time()
            self.con.executemany("UPDATE answers SET used=? WHERE key=?", [(now, k) for k in keys])
            self.con.execute("COMMIT")
        except sqlite3.Error:
            self._rollback()

    def _rollback(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    # -- file hashes (the weights hash of a model folder, read once per file version) ------------------

    def file_hash(self, path: Path) -> str:
        """sha256 of ``path``'s bytes, remembered by its real path, size, mtime and inode."""
        real = os.path.realpath(path)
        st = os.stat(real)
        stamp = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        try:
            row = self.con.execute("SELECT stat, sha256 FROM file_hashes WHERE path=?", (real,)).fetchone()
        except sqlite3.Error:
            row = None
        if row is not None and row[0] == stamp:
            return str(row[1])
        digest = file_sha256(real)
        if self.writable:
            try:
                self.con.execute("INSERT OR REPLACE INTO file_hashes VALUES (?, ?, ?)", (real, stamp, digest))
            except sqlite3.Error:
                pass
        return digest


def stored_request_ids(
    store: AnswerStore | None, mkey: str, requests: Sequence[InstanceRecord], engine_seed: int
) -> set[str]:
    """The instance ids of ``requests`` whose answers ``store`` holds under the model key ``mkey`` (verified as
    ``AnswerStore.get`` does): what an execute with this model would not compute. Empty without a store."""
    if store is None:
        return set()
    keys = {i.instance_id: answer_key(mkey, i, engine_seed) for i in requests}
    from lmeval.executor.answerkey import request_part

    wanted = {keys[i.instance_id]: (mkey, request_part(i, engine_seed)) for i in requests}
    found = store.get(wanted)
    return {iid for iid, k in keys.items() if k in found}


def _chunks(items: list[str], n: int) -> Iterable[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _why(e: BaseException) -> str:
    return " ".join(str(e).split())[:160] or type(e).__name__


def run_model_key(spec: Any, ident: Mapping[str, Any], model_dir: Path | None, store: AnswerStore | None) -> str:
    """The model key of a run (``answerkey.model_context`` of its resolved model): what ``stored_request_ids``
    and every store lookup of that run use. Weight files are hashed once per file version (remembered in the
    store)."""
    from lmeval.executor.answerkey import model_context, model_key, weights_hash
    from lmeval.executor.hardware import versions
    from lmeval.plans import find_backend

    weights = weights_hash(model_dir, store.file_hash if store is not None else file_sha256)
    entry = find_backend(spec.backend)
    server = None
    if entry is not None and entry.http:  # the server that answers, wherever its URL came from
        from lmeval.executor.backends import destination

        server = destination(spec.engine, spec.plan_base_url).url
    return model_key(model_context(spec, ident, versions(spec.backend), weights, server))
