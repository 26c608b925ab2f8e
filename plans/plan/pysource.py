"""A bound on untrusted Python source before ``ast.parse`` reads it (the ``pythonic`` tool-call parser's replies).

``ast.parse`` recurses as deep as the source nests: a reply of many nested or chained expressions (``- - - 1``,
``not not x``, ``a if b else a if b else ...``, ``a.b.c...`` or ``a[0][0]...`` thousands long) ends in a
``MemoryError`` or ``RecursionError`` instead of a syntax error. ``call_source_bounded`` scans the source once
(linear time) and says False for any source that could nest that deep, and only for source that could not be
read as calls whose arguments are literals anyway. What such calls are made of, outside strings and comments:
names (no keyword but ``True``/``False``/``None``), numbers, brackets, ``, = : .``, at most two signs in a row
(``-1``, ``1-2j``), white space and line continuations. So the scan says False for

- any other character, a keyword, an f-string (never a literal), a number glued to letters (``1if``), a string
  left open (each a syntax error or not a literal anyway);
- brackets nested deeper than ``plans.limits.MAX_DEPTH`` (as a JSON value is bounded) or more than
  ``MAX_CHAIN`` links (``.``, signs, brackets) in the expressions that enclose a point: a dotted name longer
  than that is not a function any tool set names.
"""

from __future__ import annotations

import keyword
import re
import tokenize

from lmeval.plans.limits import MAX_DEPTH

MAX_CHAIN = 256
_LITERAL_NAMES = frozenset({"True", "False", "None"})
_KEYWORDS = frozenset(keyword.kwlist) - _LITERAL_NAMES
_NUMBER = re.compile(tokenize.Number)
_TOKEN = re.compile(
    r"(?P<space>[ \t\f\r\n\\]+)|(?P<comment>#[^\r\n]*)"
    r"|(?P<word>[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)"
    r"|(?P<number>(?:[0-9][0-9A-Za-z_]*(?:\.[0-9A-Za-z_]*)?|\.[0-9][0-9A-Za-z_]*)(?:(?<=[eE])[+-][0-9A-Za-z_]+)?)"
    r"|(?P<quote>'''|\"\"\"|'|\")|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<reset>[,=:])|(?P<link>[.+-])"
)
# the rest of a string after its opening quote: a single-quoted one ends at the line's end (a syntax error)
_REST = {
    "'": re.compile(r"[^'\\\r\n]*(?:(?:\\\r\n|\\.)[^'\\\r\n]*)*'", re.DOTALL),
    '"': re.compile(r'[^"\\\r\n]*(?:(?:\\\r\n|\\.)[^"\\\r\n]*)*"', re.DOTALL),
    "'''": re.compile(r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''", re.DOTALL),
    '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""', re.DOTALL),
}
_PREFIXES = frozenset({"r", "u", "b", "br", "rb"})


def call_source_bounded(source: str) -> bool:
    """Whether ``ast.parse(source)`` cannot nest deeper than the bounds above (see the module note)."""
    chains = [0]  # links of the expression open at each bracket level (the outermost first)
    total = signs = pos = 0  # total: sum(chains)
    last_word_end, prefix = -1, ""
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if m is None:
            return False
        kind, text, start, pos = m.lastgroup, m.group(), m.start(), m.end()
        if kind in ("space", "comment"):
            continue
        if kind != "link":
            signs = 0
        if kind == "word":
            if text in _KEYWORDS:
                return False
            last_word_end, prefix = pos, text.lower()
        elif kind == "number":
            if _NUMBER.fullmatch(text) is None:
                return False
        elif kind == "quote":
            if start == last_word_end and prefix not in _PREFIXES:  # f"...", or a name glued to a string
                return False
            rest = _REST[text].match(source, pos)
            if rest is None:
                return False
            pos = rest.end()
        elif kind == "open":
            chains[-1] += 1
            chains.append(1)
            total += 2
            if len(chains) > MAX_DEPTH + 1:
                return False
        elif kind == "close":
            if len(chains) == 1:
                return False
            total -= chains.pop()
        elif kind == "reset":
            total -= chains[-1]
            chains[-1] = 0
        else:
            chains[-1] += 1
            total += 1
            signs += text in "+-"
            if signs > 2:
                return False
        if total > MAX_CHAIN:
            return False
    return True
