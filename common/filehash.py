"""The one sha256 of a file's bytes (streamed; model files, result parts, user code: a path, or a file already
open) and the one sha256 of a text (its UTF-8 bytes)."""

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


def text_sha256(text: str) -> str:
    """sha256 hex digest of ``text``'s UTF-8 bytes (a lone surrogate, as JSON can carry, kept as its bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
