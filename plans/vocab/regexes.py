"""The one rule for user-given regular expressions that run over model output: ``compile_regex`` (does Python's
``re`` take it), ``nested_quantifier`` (would it backtrack exponentially: a repeated group that holds a repeat,
``(a+)+``), and ``search_bounded`` (a search under a time limit, for what a static rule cannot see: overlapping
alternatives ``(a|a)+``, adjacent repeats ``\\d+\\.?\\d*`` on a long run of digits)."""

from __future__ import annotations

import re
from typing import Any

from lmeval.common import deadline

_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT"})  # backtracking repeats (possessive ones never give back)


def compile_regex(pattern: str) -> str | None:
    """None when ``pattern`` compiles with the engine the scorer runs it with (Python's ``re``; polars only
    runs patterns translated exactly from it, see scorer/regex/translation.py), else the error."""
    try:
        re.compile(pattern)
    except re.error as e:
        return str(e)
    except (TypeError, ValueError, OverflowError, RecursionError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def nested_quantifier(pattern: str) -> str | None:
    """None when ``pattern`` (one that compiles) has no repeat of variable length inside a repeat that can run
    more than once, else what to do about it. Such a pattern backtracks exponentially on a long output that
    almost matches (``(a+)+$`` on 40 a's and a b: minutes). A possessive (``a++``) or atomic (``(?>a+)``) inner
    or outer repeat never gives characters back, so it is not counted."""
    import re._parser as sre_parse

    if _nested(sre_parse.parse(pattern), inside=False):
        return (
            "nested quantifiers (a repeated group holding a repeat, like (a+)+) backtrack exponentially on a long "
            "output; write it without the nesting, or make a repeat possessive (a++) or atomic ((?>a+))"
        )
    return None


def _nested(items: Any, inside: bool) -> bool:
    """True when a variable-length repeat sits inside a repeat (``inside``) in the parsed ``items``."""
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            lo, hi, body = av
            if inside and lo != hi:
                return True
            if _nested(body, inside or hi > 1):
                return True
        elif name in ("POSSESSIVE_REPEAT", "ATOMIC_GROUP"):
            continue  # nothing inside is backtracked into once it has matched
        elif name == "SUBPATTERN":
            if _nested(av[3], inside):
                return True
        elif name == "BRANCH":
            if any(_nested(b, inside) for b in av[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _nested(av[1], inside):
                return True
        elif name == "GROUPREF_EXISTS":
            if any(b is not None and _nested(b, inside) for b in av[1:]):
                return True
    return False


class RegexTimeout(Exception):
    """A search ran longer than its limit (``search_bounded``)."""


def groups_bounded(pattern: str, text: str, seconds: float) -> list[str | None]:
    """Group 1 of every match of ``pattern`` in ``text`` (``re.finditer``), or ``RegexTimeout`` once the search
    has run ``seconds`` in all, as ``search_bounded``."""
    with deadline(seconds, "the regular expression", RegexTimeout):
        return [m.group(1) for m in re.finditer(pattern, text)]


def search_bounded(pattern: str, text: str, seconds: float) -> re.Match[str] | None:
    """``re.search(pattern, text)``, or ``RegexTimeout`` once it has run ``seconds`` (``re`` checks for signals
    as it backtracks; the limit holds in the main thread, see ``lmeval.common.timelimit``)."""
    with deadline(seconds, "the regular expression", RegexTimeout):
        return re.search(pattern, text)
