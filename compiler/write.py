"""Write an already sealed plan (header + the record bytes ``plans.io.seal`` produced) atomically.

Same bytes as ``plans.io.write_plan`` (header map, then the record maps); it only skips encoding every
record a second time.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from plans.canonical import canonical_bytes
from plans.records import PlanHeader


def write_sealed(path: str | os.PathLike[str], sealed: PlanHeader, blobs: list[bytes]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(canonical_bytes(sealed.to_dict()))
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target
