"""Where in a JSON text its nesting first passes a depth: the line and the path (keys and indices) of the value
that does, found by scanning the text (``json.loads`` itself recurses, so a text nested a few thousand levels
deep ends in a ``RecursionError`` that names no place). Linear in the text and iterative: any text is scanned
in bounded memory. The contract's one depth scan: ``plans.json_nesting_within`` (a model's reply, before
``json.loads``) and the compiler's trajectory files (where it names the place) both read it."""

from __future__ import annotations

import re
from typing import Any

# a string's opening quote, or one of the structural characters the path depends on
_SPECIAL = re.compile(r'["\[\]{},]')
# a string's body and its closing quote, from just after the opening one (one pass, no backtracking)
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def too_deep_at(text: str, max_depth: int) -> tuple[int, list[str | int]] | None:
    """(line counting from 1, path to the value) of the first list or object nested deeper than ``max_depth``
    in ``text`` (one JSON value), or None when none is. The path names the keys and indices down to the
    container the too-deep one opens in; a malformed text gives a best-effort answer."""
    path: list[str | int] = []  # one entry per open container: its current key or index
    is_obj: list[bool] = []
    want_key = False
    pos = 0
    while (m := _SPECIAL.search(text, pos)) is not None:
        c, pos = m.group(), m.end()
        if c == '"':
            rest = _STRING_REST.match(text, pos)
            if rest is None:  # an unterminated string: json.loads stops there, nothing deeper follows
                return None
            if is_obj and want_key:
                path[-1] = text[pos : min(rest.end() - 1, pos + 40)]  # (a key as written, at most 40 characters)
                want_key = False
            pos = rest.end()
        elif c in "[{":
            if len(path) >= max_depth:
                return text.count("\n", 0, m.start()) + 1, path
            path.append(0 if c == "[" else "")
            is_obj.append(c == "{")
            want_key = c == "{"
        elif c in "]}":
            if path:
                path.pop()
                is_obj.pop()
            want_key = False
        elif is_obj:  # a comma: the next string of an object is a key
            want_key = is_obj[-1]
            if not is_obj[-1]:
                path[-1] = int(path[-1]) + 1
    return None


def deep_path(value: Any, max_depth: int) -> list[str | int] | None:
    """The path (keys and indices) to the first list or object of a parsed value nested deeper than
    ``max_depth`` (the value itself at depth 1, as ``plans.value_problem`` counts), or None. Iterative."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        v, at = stack.pop()
        if type(v) not in (dict, list):
            continue
        if len(at) >= max_depth:
            return at
        items = list(v.items()) if type(v) is dict else list(enumerate(v))
        stack.extend((child, [*at, key]) for key, child in reversed(items))
    return None


def path_text(path: list[str | int], base: str = "", keep: int = 6) -> str:
    """``base`` + ``a.b[2].c`` for ``["a", "b", 2, "c"]`` (the first ``keep`` parts, then ``...``)."""
    out = base
    for p in path[:keep]:  # (the JSON text's own spelling of a key: escapes are kept)
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return (out or "the top level") + ("..." if len(path) > keep else "")
