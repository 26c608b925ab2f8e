"""JSON text that is valid whatever the data holds: the one way lmeval writes JSON (files and standard output).

``json.dumps(..., ensure_ascii=False)`` alone has two holes: a lone surrogate (a document's half of an emoji)
is written raw, so the text cannot be encoded as UTF-8 (a traceback when the file is written), and a float
``nan``/``inf`` is written as ``NaN``/``Infinity``, which is not JSON. And printed through the terminal
escaper (``common/termsafe.py``), a C1 control such as ``\\x85`` becomes the four characters ``\\x85``,
an escape JSON does not have.

``json_text`` fixes all three: non-finite floats become their string (``"nan"``, ``"inf"``, ``"-inf"``,
as ``plans.scored.jsonable`` writes them), lone surrogates are written as ``\\udXXX`` escapes, and with
``terminal=True`` every character the terminal escaper would touch (C0/C1 controls, DEL, bidi overrides and
isolates, lone surrogates) is written as its JSON ``\\uXXXX`` escape, so the line is both valid JSON and
terminal-safe (the escaper then leaves it as it is). Such characters only ever occur inside JSON strings,
where ``\\uXXXX`` means the same character: parsing gives back the same value. Everything else is kept as
``json.dumps(..., ensure_ascii=False)`` writes it (the same bytes for data without such characters).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from lmeval.common.termsafe import UNSAFE

_SURROGATE = re.compile("[\ud800-\udfff]")


def _u_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m[0]):04x}"


def finite(x: Any) -> Any:
    """``x`` with every non-finite float (in dicts, lists and tuples) replaced by its string."""
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def json_text(obj: Any, *, terminal: bool = False, **kwargs: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, allow_nan=False, **kwargs)`` made valid whatever ``obj`` holds
    (see the module's note); ``terminal=True`` for a line printed on standard output."""
    kwargs.setdefault("ensure_ascii", False)
    try:
        text = json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:  # a non-finite float somewhere: written as its string, never as NaN/Infinity
        text = json.dumps(finite(obj), allow_nan=False, **kwargs)
    pattern = UNSAFE if terminal else _SURROGATE
    return pattern.sub(_u_escape, text) if pattern.search(text) else text
