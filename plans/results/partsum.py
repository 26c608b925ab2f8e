"""Checksummed result parts: a committed part's name carries the sha256 of its bytes
(``part-000003-s<64 hex>.parquet``; a chunk part: ``part-c…-n<rows>-s<64 hex>.parquet``), set by the one
rename that commits it, so the checksum and the part appear together or not at all. Every reader of parts
(``plans.results.read_parts``: resume, ``--reuse``, merge, score) checks it first: a part whose bytes do not
hash to its name is named in one line and never used. Parts are also opened only when they are regular files
(a FIFO named like a part is refused, not read). A part named without a checksum (written by hand, or by an
lmeval before checksums) is read unchecked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from lmeval.common import file_sha256
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import InputError, open_regular

PART_SUM = re.compile(r"-s([0-9a-f]{64})\.parquet$")


def checksummed(stem: str, digest: str) -> str:
    """The committed name of a part ``stem`` (``part-000003``) whose bytes hash to ``digest``."""
    return f"{stem}-s{digest}.parquet"


def part_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a regular file's bytes (streamed); ``PlanError`` when it is not a regular file."""
    try:
        f = open_regular(path, what="result part")
    except InputError as e:
        raise PlanError(str(e)) from None
    with f:
        return file_sha256(f)


def verify_parts(parts: Sequence[str | os.PathLike[str]]) -> None:
    """Each part is a regular file, and one whose name carries a checksum hashes to it."""
    for p in parts:
        got = part_sha256(p)
        m = PART_SUM.search(Path(p).name)
        if m is not None and m.group(1) != got:
            raise PlanError(
                f"{os.fspath(p)}: result part fails its checksum (its bytes hash to {got[:16]}…, its name says "
                f"{m.group(1)[:16]}…): the file was corrupted; remove it and rerun lmeval execute to redo its rows"
            )
