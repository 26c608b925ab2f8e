"""plans/vocab/regexes.py: user regular expressions that run over model output cannot hang a run."""

from __future__ import annotations

import time

import pytest

from lmeval.plans.vocab import RegexTimeout, compile_regex, nested_quantifier, search_bounded


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w*)*x", r"(?:\d+\s?)+\]", r"((ab)*c?)+d", r"(a|b+){2,}$"])
def test_nested_repeats_are_named(pattern: str) -> None:
    why = nested_quantifier(pattern)
    assert why is not None and "nested quantifiers" in why and "\n" not in why


@pytest.mark.parametrize(
    "pattern",
    [
        r"Rating: \[\[(\d+\.?\d*)\]\]",  # MT-Bench's rule
        r"\[\[(A|B|C)\]\]",
        r"(a{3})+",  # a fixed-length inner repeat cannot be split two ways
        r"(a++)+$",  # possessive inner repeat never gives back
        r"(?>a+)+$",  # atomic group
        r"(a+)?b",  # an outer repeat that runs at most once
    ],
)
def test_linear_patterns_pass(pattern: str) -> None:
    assert nested_quantifier(pattern) is None


def test_search_is_stopped_at_its_limit() -> None:
    # overlapping alternatives: no nesting of repeats, still exponential; only the time limit catches it
    assert nested_quantifier(r"(a|a)+$") is None
    t = time.monotonic()
    with pytest.raises(RegexTimeout, match="longer than the limit of 0.3 s"):
        search_bounded(r"(a|a)+$", "a" * 40 + "b", 0.3)
    assert time.monotonic() - t < 2.0


def test_search_finds_and_leaves_no_timer_behind() -> None:
    import signal

    m = search_bounded(r"Rating: \[\[(\d+)\]\]", "so. Rating: [[7]]", 1.0)
    assert m is not None and m.group(1) == "7"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_compile_errors_are_text() -> None:
    assert compile_regex("(a") is not None and compile_regex(r"(\d+)") is None
