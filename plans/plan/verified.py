"""Validation once per plan content: the record of plans that passed ``plans/plan/validate.py``'s full check.

Reading a large plan re-runs every record's contract check (about 4.6 s on the MMLU 5-shot plan), paid again
by ``execute``, ``score`` and ``diff``. After a whole-plan read passes the check and its hash, the sha256 of the
plan file's bytes is recorded in ``$LMEVAL_CACHE/verified-plans.json`` (default ``~/.cache/lmeval``), keyed
together with ``VALIDATOR_ID`` (an explicit ``VALIDATOR_VERSION`` and the hash of ``plans/plan/validate.py``'s
source, so any change to the rules invalidates every entry). A later read hashes the file's bytes (well under
a second for a 100 MB plan) and skips the per-record check when recorded; the plan hash and record counts are
still verified on every read. A plan with one byte changed has another hash and is fully checked.

The record is untrusted input: read only when it is a regular file of at most ``MAX_RECORD_BYTES`` (opened
non-blocking: a FIFO or a link to ``/dev/zero`` is refused, not read), ignored when malformed, and rewritten
atomically. ``LMEVAL_VERIFIED_PLANS=0`` turns it off (the tests do, except their own).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from lmeval.common import file_sha256, read_cache_file, write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import InputError
from lmeval.plans.plan.records import PlanHeader
from lmeval.plans.plan.validate import RecordValidator

VALIDATOR_VERSION = 1  # raise when the contract check's rules change in a way its source hash would not show
RECORD_NAME = "verified-plans.json"
RECORD_FORMAT = "lmeval-verified-plans/1"
MAX_RECORD_BYTES = 1 << 20  # a larger record is ignored (and replaced)
MAX_ENTRIES = 4096  # the oldest entries are dropped beyond this
_HASH_CHUNK = 1 << 20
_log = logging.getLogger("lmeval.plans")


def _validator_id() -> str:
    src = Path(__file__).with_name("validate.py")
    try:
        digest = file_sha256(src)[:16]
    except OSError:  # no source to hash: the explicit version alone
        digest = "nosource"
    return f"{VALIDATOR_VERSION}-{digest}"


VALIDATOR_ID = _validator_id()


def show_check_cost() -> None:
    """Print each plan check's cost on stderr ("plan check: 0.03 s (verified before): PATH"): ``-v``."""
    if not any(getattr(h, "name", None) == "lmeval-plan-check" for h in _log.handlers):
        handler = logging.StreamHandler()
        handler.name = "lmeval-plan-check"
        handler.setFormatter(logging.Formatter("%(message)s"))
        _log.addHandler(handler)
    _log.setLevel(logging.DEBUG)


def enabled() -> bool:
    """False when ``LMEVAL_VERIFIED_PLANS`` is 0 / false / no / off."""
    return os.environ.get("LMEVAL_VERIFIED_PLANS", "1").strip().lower() not in ("0", "false", "no", "off")


def record_path() -> Path:
    root = os.environ.get("LMEVAL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lmeval")
    return Path(root) / RECORD_NAME


def file_digest(f: IO[bytes]) -> str:
    """sha256 of the whole open file's bytes (its position is restored)."""
    pos = f.tell()
    f.seek(0)
    h = hashlib.sha256()
    while chunk := f.read(_HASH_CHUNK):
        h.update(chunk)
    f.seek(pos)
    return h.hexdigest()


def entry_key(digest: str, validator_id: str | None = None) -> str:
    """The record's key of a plan: its bytes' hash together with the validator's version."""
    vid = VALIDATOR_ID if validator_id is None else validator_id
    return hashlib.sha256(f"{vid}\0{digest}".encode()).hexdigest()


def _load_entries(path: Path) -> list[str]:
    """The record's keys; empty when it is missing, not a regular file, too large or malformed."""
    raw = read_cache_file(path, MAX_RECORD_BYTES)
    if raw is None:
        return []
    try:
        data: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    if type(data) is not dict or data.get("format") != RECORD_FORMAT:
        return []
    entries = data.get("entries")
    if type(entries) is not list:
        return []
    return [e for e in entries if type(e) is str and len(e) == 64]


def is_verified(digest: str) -> bool:
    """Whether a plan whose bytes hash to ``digest`` passed the full check under this validator."""
    return enabled() and entry_key(digest) in _load_entries(record_path())


def record_verified(digest: str) -> None:
    """Record that the plan whose bytes hash to ``digest`` passed the full check; a failure to write the
    record (read-only cache, full disk) only costs the next read a full check."""
    if not enabled():
        return
    path = record_path()
    key = entry_key(digest)
    entries = [e for e in _load_entries(path) if e != key]
    entries.append(key)
    text = json.dumps({"format": RECORD_FORMAT, "entries": entries[-MAX_ENTRIES:]}, indent=0)
    try:
        write_atomic(path, lambda f: f.write(text.encode("utf-8")))
    except (InputError, OSError) as e:
        _log.debug("verified-plans record not written: %s", e)


def _identity(f: IO[bytes]) -> tuple[int, int, int, int]:
    st = os.fstat(f.fileno())
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class PlanCheck:
    """The contract check of one whole-plan read of the open file ``f``: ``records`` checks each record map
    (or passes them through when the file's bytes were verified before), ``passed`` records a plan whose read
    ended with its hash verified. ``seconds``: the check's cost (hashing the file, checking the records)."""

    def __init__(self, f: IO[bytes], path: str) -> None:
        start = time.perf_counter()
        self.f, self.path = f, path
        self.identity = _identity(f)
        self.digest = file_digest(f) if enabled() else None
        self.known = self.digest is not None and is_verified(self.digest)
        self.unchanged = False  # the file's identity when the record stream ended
        self.seconds = time.perf_counter() - start

    def records(
        self, objs: Iterable[dict[str, Any]], header: PlanHeader, order: list[str] | None
    ) -> Iterator[dict[str, Any]]:
        """``objs`` (record maps in stream order), each checked before it is yielded unless verified before;
        the counts when they end."""
        if self.known:
            yield from objs
            if not self._unchanged():
                raise PlanError(f"{self.path}: the plan file changed while it was read")
            return
        v = RecordValidator(header, self.path, order)
        clock = time.perf_counter
        for obj in objs:
            t = clock()
            v.check(obj)
            self.seconds += clock() - t
            yield obj
        t = clock()
        v.finish()
        self.seconds += clock() - t
        self._unchanged()

    def _unchanged(self) -> bool:
        self.unchanged = _identity(self.f) == self.identity
        return self.unchanged

    def passed(self) -> None:
        """The whole plan was read, checked and its hash verified: record it (if its file did not change
        meanwhile) and log the check's cost."""
        if self.known:
            _log.debug("plan check: %.2f s (verified before): %s", self.seconds, self.path)
            return
        if self.digest is not None and self.unchanged:
            record_verified(self.digest)
        _log.debug("plan check: %.2f s: %s", self.seconds, self.path)
