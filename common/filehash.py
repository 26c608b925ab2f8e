"""The one streamed sha256 of a file's bytes (model files, result parts): a path, or a file already open."""

from __future__ import annotations

import hashlib
import os
from typing import IO

CHUNK = 1 << 22


def file_sha256(source: str | os.PathLike[str] | IO[bytes]) -> str:
    """sha256 hex digest of a file's bytes, read in 4 MiB chunks; ``source`` is a path or an open binary file
    (read to its end, not closed)."""
    h = hashlib.sha256()
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
    else:
        while chunk := source.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()
