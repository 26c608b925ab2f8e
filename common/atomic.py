"""Atomic file writes: a temporary file in the target's directory, fsync, rename. A failure leaves the old
file (or nothing) in place, never a half-written one. A target that exists and is not a regular file (a
directory, ``/dev/null``, a FIFO) is refused, and a failed write (disk full, read-only) is one ``InputError``
naming the target."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from lmeval.common.errors import InputError, file_kind


def write_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write(f)`` on a temporary binary file, then move it over ``path`` (created with the umask's
    permissions, as a plain ``open`` would)."""
    target = Path(path)
    try:
        st = os.stat(target)
    except OSError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):  # never replace a directory, a device or a FIFO
            raise InputError(f"{target}: exists and is {file_kind(st.st_mode)}, not a file; refusing to replace it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise InputError(f"{target}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        why = os_error_of(e)
        if why is not None:  # disk full, read-only, file too large, ...
            raise InputError(f"{target}: cannot write: {why}; nothing was replaced") from None
        raise
    return target


def os_error_of(e: BaseException) -> str | None:
    """The operating system's reason when ``e`` is a failed file operation: an ``OSError``, or a library's
    error that wraps one (polars: "... (os error 28)"); else None."""
    if isinstance(e, OSError) and e.errno is not None:
        return e.strerror or str(e)
    m = re.search(r"\(os error (\d+)\)", str(e))
    return os.strerror(int(m.group(1))) if m else None


def _umask_mode() -> int:
    """0666 less the process umask (mkstemp itself makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
