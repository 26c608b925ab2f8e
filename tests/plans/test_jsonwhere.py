"""The contract's one JSON depth scan (plans/jsonwhere.py): read by the tool-call parsers before ``json.loads``
(``json_nesting_within``) and by the trajectory compile (``too_deep_at``, naming the place)."""

from __future__ import annotations

import subprocess
import sys

from lmeval.plans import MAX_DEPTH, json_nesting_within, too_deep_at


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert too_deep_at('{"a": [' + '"[[[["' * 100 + "]}", 2) is None
    assert too_deep_at('{"a": [[1]]}', 2) == (1, ["a", 0])
    assert too_deep_at('[1, 2, {"k\\"ey": [[0]]}]', 3) == (1, [2, 'k\\"ey', 0])
    assert json_nesting_within("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert not json_nesting_within("[" * (MAX_DEPTH + 1))


def test_an_unterminated_string_ends_the_scan() -> None:
    # json.loads stops at an unterminated string: brackets after it are never reached
    assert too_deep_at('[["' + "[" * 100, 1) == (1, [0])
    assert too_deep_at('["' + "[" * 100, 1) is None


def test_escaped_quotes_without_an_end_are_one_pass() -> None:
    """An unterminated string of escaped quotes (a reply or a file no one checked) is scanned once: a pattern
    that restarts at every quote takes quadratic time on it (200,000 of them: hours); here it returns at once,
    so a generous subprocess timeout tells the two apart without timing anything."""
    code = (
        "from lmeval.plans import json_nesting_within, too_deep_at\n"
        "t = '[' * 10 + '\"' + '\\\\\"' * 200_000\n"
        "assert too_deep_at(t, 64) is None and json_nesting_within(t)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
