"""Atomic file writes: a temporary file in the target's directory, fsync, rename. A failure leaves the old
file (or nothing) in place, never a half-written one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def write_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write(f)`` on a temporary binary file, then move it over ``path`` (created with the umask's
    permissions, as a plain ``open`` would)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def _umask_mode() -> int:
    """0666 less the process umask (mkstemp itself makes 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
