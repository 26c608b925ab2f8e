"""Small HTML helpers: escaping, inline JSON data blocks, number formatting (one place, same bytes)."""

from __future__ import annotations

import html
import math
from typing import Any

from lmeval.common import json_text


def esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def script_json(data: Any) -> str:
    """Canonical JSON (sorted keys, no spaces; ``common.json_text``: no NaN, no raw lone surrogate) safe inside
    ``<script type="application/json">``: every ``<``, ``>`` and ``&`` is escaped, so no data can close the
    element or open a comment."""
    text = json_text(data, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def json_script(element_id: str, data: Any) -> str:
    return f'<script type="application/json" id="{esc(element_id)}">{script_json(data)}</script>'


def fmt(v: Any, digits: int = 4) -> str:
    """A metric value as the terminal table shows it (4 decimals), other values as text."""
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}" if math.isfinite(v) else str(v)
    return str(v)


def raw(v: Any) -> str:
    """A value for a ``data-value`` attribute: the exact number (``repr``), or the text."""
    if isinstance(v, float):
        return repr(v)
    return "" if v is None else str(v)


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def mapping(d: Any, key: str) -> dict[str, Any]:
    """``d[key]`` when it is a JSON object, else an empty one (a malformed field shows as missing)."""
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}
