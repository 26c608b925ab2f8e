"""The compiler's build cache: compiled tasks (``compiler.cache.part`` entries) stored by key (``compiler.cache.key``)
under ``$LMEVAL_CACHE/build`` (default ``~/.cache/lmeval/build``; ``LMEVAL_BUILD_CACHE_DIR`` moves it).

- Entries are written atomically (``common.atomic``), so a crash or a concurrent compile never leaves half an
  entry under a key; two compiles writing one key write the same bytes.
- An entry is verified when read (``part.unpack_part``); one that fails any check is deleted and the task
  is built again.
- The cache is bounded: after a compile stores entries, the oldest ones (by mtime; a hit refreshes it, so this
  is least-recently used) are removed until the total is under ``LMEVAL_BUILD_CACHE_MB`` megabytes (default
  ``DEFAULT_MAX_MB``).
- ``lmeval compile --no-cache`` (or ``LMEVAL_BUILD_CACHE=0``) compiles without reading or writing it.
- Plan hashes: a compile whose tasks all went through entries remembers its plan hash under a key of the
  header bytes the hash starts from and every task's entry sha256 (which fixes the task's bytes: its frames),
  so the next such compile need not decompress and hash every task's records again (``plan_hash_key``). A
  memo is checked when read (its own sha256) and is evicted like an entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lmeval.common import InputError, discard, read_cache_file, write_atomic
from lmeval.compiler.cache.part import CorruptEntry, TaskPart, unpack_part

DEFAULT_MAX_MB = 2048  # a full MMLU 5-shot compile stores about 10 MB
_SUFFIX = ".lbc"
_MEMO = ".lph"  # a plan-hash memo
_EVICTABLE = (_SUFFIX, _MEMO, ".lcc")  # and compiler.cache.compose's memos
# the largest cache file read back (``common.cachefile``): anything longer, or not a regular file, is a miss
MAX_ENTRY_BYTES = 512 << 20  # a full MMLU 5-shot entry is well under 1 MB
_MAX_MEMO_BYTES = 4096  # "<64 hex> <16 hex>\n"


def default_dir() -> Path:
    env = os.environ.get("LMEVAL_BUILD_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("LMEVAL_CACHE") or str(Path.home() / ".cache" / "lmeval")
    return Path(base) / "build"


def enabled_from_env() -> bool:
    """False when ``LMEVAL_BUILD_CACHE`` is 0 / false / no / off."""
    return os.environ.get("LMEVAL_BUILD_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def max_bytes_from_env() -> int:
    raw = os.environ.get("LMEVAL_BUILD_CACHE_MB", "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        mb = DEFAULT_MAX_MB
    return max(0, int(mb * (1 << 20)))


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    uncacheable: int = 0
    corrupt: int = 0
    stored: int = 0
    evicted: int = 0


class BuildCache:
    """Entries under ``root``, at most ``max_bytes`` in all (checked after storing)."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.stats = CacheStats()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{_SUFFIX}"

    def load(self, key: str) -> TaskPart | None:
        """The verified entry for ``key``, or None (missing, unreadable or corrupt: a corrupt one is removed)."""
        p = self.path(key)
        blob = read_cache_file(p, MAX_ENTRY_BYTES)
        if blob is None:  # missing, or a link, FIFO, device or oversized file: built again, never followed
            self.stats.misses += 1
            discard(p)
            return None
        try:
            part = unpack_part(blob, key, lazy=True)
        except CorruptEntry:
            self.stats.corrupt += 1
            self.stats.misses += 1
            discard(p)
            return None
        with contextlib.suppress(OSError):
            os.utime(p)  # least-recently used goes first
        self.stats.hits += 1
        return part

    def store(self, key: str, entry: bytes) -> None:
        """Write ``entry`` (``part.pack_part``'s bytes) atomically; a cache that cannot be written is skipped."""
        if put_bytes(self.path(key), entry):
            self.stats.stored += 1

    def plan_hash(self, key: str) -> str | None:
        """The plan hash remembered under ``key`` (``plan_hash_key``), or None (missing or failing its check)."""
        p = self.root / key[:2] / f"{key}{_MEMO}"
        blob = read_cache_file(p, _MAX_MEMO_BYTES)
        try:
            value, check = (blob or b"").decode("ascii").split()
        except ValueError:  # missing, not a regular file, or not two words
            discard(p)
            return None
        if len(value) != 64 or check != _memo_check(key, value):
            discard(p)
            return None
        with contextlib.suppress(OSError):
            os.utime(p)
        return value

    def store_plan_hash(self, key: str, value: str) -> None:
        put_bytes(self.root / key[:2] / f"{key}{_MEMO}", f"{value} {_memo_check(key, value)}\n".encode("ascii"))

    def evict(self) -> None:
        """Remove the least recently used entries until the cache holds at most ``max_bytes``."""
        entries: list[tuple[int, int, Path]] = []
        total = 0
        try:
            subs = list(os.scandir(self.root))
        except OSError:
            return
        for sub in subs:
            if not sub.is_dir(follow_symlinks=False):
                continue
            try:
                for e in os.scandir(sub.path):
                    if e.name.endswith(_EVICTABLE) and e.is_file(follow_symlinks=False):
                        st = e.stat(follow_symlinks=False)
                        entries.append((st.st_mtime_ns, st.st_size, Path(e.path)))
                        total += st.st_size
            except OSError:
                continue
        if total <= self.max_bytes:
            return
        for _, size, p in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
                self.stats.evicted += 1


def put_bytes(path: Path, data: bytes) -> bool:
    """Write ``data`` to the cache file ``path`` atomically; False (nothing written) when the cache cannot be
    written: a cache is an optimisation, never a reason for a compile to fail."""

    def write(f: IO[bytes]) -> None:
        f.write(data)

    try:
        write_atomic(path, write)
    except (InputError, OSError):
        return False
    return True


def plan_hash_key(header_bytes: bytes, digests: list[str]) -> str:
    """The memo key of a plan hash: sha256 of the header bytes it starts from (``integrity.header_hash_bytes``)
    and each task's entry sha256 in plan order (``TaskPart.digest``)."""
    h = hashlib.sha256(b"lmeval-plan-hash 1\n")
    h.update(len(header_bytes).to_bytes(8, "big") + header_bytes)
    for d in digests:
        h.update(bytes.fromhex(d))
    return h.hexdigest()


def _memo_check(key: str, value: str) -> str:
    return hashlib.sha256(f"{key} {value}".encode("ascii")).hexdigest()[:16]
