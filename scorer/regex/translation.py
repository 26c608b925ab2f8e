"""Translate a Python ``re`` pattern into an equivalent Rust-regex pattern for polars, when that is exact.

Python's ``re`` is the reference (lm-eval uses it). polars uses Rust's ``regex`` crate, whose syntax and
character classes differ (``\\s`` covers different code points, ``$`` does not match before a final
newline, ``[a&&b]`` is an intersection, empty matches advance differently). Rather than hope a pattern
means the same in both, we parse it with Python's own parser (``re._parser``) and re-emit it node by node,
allowing only constructs whose meaning we can state exactly *on ASCII text*. Callers apply the polars
pattern only to ASCII rows (and, for ``$``, rows that do not end with a newline) and send every other row
through Python's ``re``. Anything not in the whitelist (lookarounds, back-references, IGNORECASE,
MULTILINE, scoped flags, possibly-empty matches) returns ``None``: Python handles the whole column.
"""

from __future__ import annotations

import re
import re._constants as C  # noqa: N812
import re._parser as P  # noqa: N812
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Python's str-pattern classes restricted to ASCII (\s also matches \x1c-\x1f: str.isspace() is true there)
_ASCII_CLASS = {
    C.CATEGORY_DIGIT: r"0-9",
    C.CATEGORY_WORD: r"0-9A-Za-z_",
    C.CATEGORY_SPACE: r"\t\n\x0B\x0C\r\x1C-\x1F\x20",
}
_NEGATED = {
    C.CATEGORY_NOT_DIGIT: C.CATEGORY_DIGIT,
    C.CATEGORY_NOT_WORD: C.CATEGORY_WORD,
    C.CATEGORY_NOT_SPACE: C.CATEGORY_SPACE,
}
# what str.strip() removes, restricted to ASCII
PY_ASCII_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "

_ALLOWED_FLAGS = C.SRE_FLAG_UNICODE | C.SRE_FLAG_DOTALL | C.SRE_FLAG_VERBOSE | C.SRE_FLAG_ASCII


class _Unsupported(Exception):
    pass


@dataclass(frozen=True)
class RustPattern:
    pattern: str  # for polars (Rust regex syntax)
    n_groups: int  # capturing groups, numbered as in Python
    has_end_anchor: bool  # uses Python `$`: only exact on rows not ending in "\n"
    has_assertions: bool  # ^, $, \b, \B, \A, \Z: context-dependent, so no re-matching a lone match
    unicode_safe: bool = False  # no \d \s \w \b \B: same meaning on any text, not only ASCII
    matches_non_ascii: bool = True  # some match could contain a non-ASCII character


def _lit(c: int) -> str:
    ch = chr(c)
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\x{{{c:X}}}"


class _Emitter:
    def __init__(self, dotall: bool) -> None:
        self.dotall = dotall
        self.end_anchor = False
        self.assertions = False
        self.categories = False  # \d \s \w (ASCII-only translations) or \b \B used
        self.non_ascii = False  # can consume a non-ASCII character

    def seq(self, items: Any) -> str:
        return "".join(self.node(op, av) for op, av in items)

    def atom(self, items: Any) -> str:
        return "(?:" + self.seq(items) + ")"

    def node(self, op: Any, av: Any) -> str:
        if op is C.LITERAL:
            self.non_ascii |= av > 0x7F
            return _lit(av)
        if op is C.NOT_LITERAL:
            self.non_ascii = True
            return f"[^{_lit(av)}]"
        if op is C.ANY:
            self.non_ascii = True
            return "(?s:.)" if self.dotall else "."
        if op is C.IN:
            return self.klass(av)
        if op is C.BRANCH:
            return "(?:" + "|".join(self.seq(b) for b in av[1]) + ")"
        if op is C.SUBPATTERN:
            group, add_flags, del_flags, sub = av
            if add_flags or del_flags:
                raise _Unsupported("scoped flags")
            inner = self.seq(sub)
            return f"({inner})" if group is not None else f"(?:{inner})"
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            if hi is C.MAXREPEAT:
                q = f"{{{lo},}}"
            elif lo == hi:
                q = f"{{{lo}}}"
            else:
                q = f"{{{lo},{hi}}}"
            return self.atom(sub) + q + ("?" if op is C.MIN_REPEAT else "")
        if op is C.AT:
            self.assertions = True
            if av in (C.AT_BEGINNING, C.AT_BEGINNING_STRING):
                return r"\A"
            if av is C.AT_END_STRING:
                return r"\z"
            if av is C.AT_END:
                self.end_anchor = True
                return r"\z"
            if av is C.AT_BOUNDARY:
                self.categories = True
                return r"\b"
            if av is C.AT_NON_BOUNDARY:
                self.categories = True
                return r"\B"
            raise _Unsupported(f"anchor {av}")
        raise _Unsupported(str(op))

    def klass(self, items: Any) -> str:
        parts: list[str] = []
        neg = False
        for op, av in items:
            if op is C.NEGATE:
                neg = True
                self.non_ascii = True
            elif op is C.LITERAL:
                self.non_ascii |= av > 0x7F
                parts.append(_lit(av))
            elif op is C.RANGE:
                self.non_ascii |= av[1] > 0x7F
                parts.append(f"{_lit(av[0])}-{_lit(av[1])}")
            elif op is C.CATEGORY:
                self.categories = True
                if av in _ASCII_CLASS:
                    parts.append(_ASCII_CLASS[av])
                elif av in _NEGATED:
                    parts.append(f"[^{_ASCII_CLASS[_NEGATED[av]]}]")
                else:
                    raise _Unsupported(f"category {av}")
            else:
                raise _Unsupported(f"class item {op}")
        if not parts:
            raise _Unsupported("empty class")
        return "[" + ("^" if neg else "") + "".join(parts) + "]"


@lru_cache(maxsize=256)
def translate(pattern: str) -> RustPattern | None:
    """The polars equivalent of ``pattern`` on ASCII text, or None when it cannot be stated exactly."""
    try:
        parsed = P.parse(pattern)
    except re.error:
        return None
    flags = parsed.state.flags
    if flags & ~_ALLOWED_FLAGS:
        return None
    try:
        if parsed.getwidth()[0] == 0:
            return None  # empty matches advance differently in the two engines
        em = _Emitter(dotall=bool(flags & C.SRE_FLAG_DOTALL))
        body = em.seq(parsed.data)
    except (_Unsupported, OverflowError, RecursionError):
        return None
    return RustPattern(
        pattern=body,
        n_groups=parsed.state.groups - 1,
        has_end_anchor=em.end_anchor,
        has_assertions=em.assertions,
        unicode_safe=not em.categories,
        matches_non_ascii=em.non_ascii or em.categories,
    )
