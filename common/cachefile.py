"""Reading a file of the lmeval cache (``$LMEVAL_CACHE``) as the untrusted input it is.

Anyone who can write the cache folder can put anything under a cache file's name: a symlink to ``/dev/zero``
(an endless read), a FIFO (a read that never returns), a huge file, a symlink to a file elsewhere.
``read_cache_file`` opens without following a final symlink and without blocking, accepts only a regular file
of at most ``max_bytes``, and reads at most that much; anything else is None, which every caller treats as "no
entry": the entry is built again (or the cache is bypassed), never followed. ``discard`` removes such an entry so
that the rebuilt one can take its place.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def read_cache_file(path: str | os.PathLike[str], max_bytes: int) -> bytes | None:
    """The bytes of the regular file ``path`` (not a symlink), or None when it is missing, unreadable, not a
    regular file (a symlink, FIFO, device, socket or directory) or longer than ``max_bytes``."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:  # missing, unreadable, or a symlink (ELOOP under O_NOFOLLOW)
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        return _read_at_most(fd, max_bytes)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_at_most(fd: int, max_bytes: int) -> bytes | None:
    """Everything ``fd`` holds, or None when that is more than ``max_bytes`` (a file that grew while read)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            return None


def discard(path: str | os.PathLike[str]) -> None:
    """Remove the bad cache entry ``path`` (the link itself for a symlink; a directory is left alone)."""
    with contextlib.suppress(OSError):
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            Path(path).unlink()
