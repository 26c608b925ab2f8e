"""BoolQ: accept both the google/boolq layout (``answer``: bool) and SuperGLUE's (``label``: 0/1)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def process_docs(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for d in docs:
        if "label" not in d or d["label"] is None:
            d = {**d, "label": int(bool(d["answer"]))}
        out.append(d)
    return out
