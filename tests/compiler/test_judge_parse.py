"""The judge's parse rule and pairwise consistency (plans/vocab/judging.py) on hostile outputs."""

from __future__ import annotations

import pytest

from lmeval.plans.errors import PlanError
from lmeval.plans.vocab.judging import MAX_PARSED_CHARS, ParseRule, consistent

SINGLE = ParseRule.from_dict({"regex": r"Rating: \[\[(\d+\.?\d*)\]\]", "min": 1, "max": 10}, "single")
PAIR = ParseRule.from_dict({"regex": r"\[\[(A|B|C)\]\]", "labels": {"A": "a", "B": "b", "C": "tie"}}, "pairwise")


def test_single_grades_first_match_in_range() -> None:
    assert SINGLE.grade("fine. Rating: [[7]] later Rating: [[2]]") == 7.0
    assert SINGLE.grade("Rating: [[11]]") is None  # out of range
    assert SINGLE.grade("Rating: [[0]]") is None
    assert SINGLE.grade("Rating: [[７]]") == 7.0  # \d matches unicode digits; float() reads them
    assert SINGLE.grade("Rating: 7") is None
    assert SINGLE.grade(None) is None
    assert SINGLE.grade("Ràting: [[7]] 🙂") is None


def test_single_reads_only_a_bounded_prefix() -> None:
    assert SINGLE.grade("x" * MAX_PARSED_CHARS + "Rating: [[9]]") is None
    assert SINGLE.grade("Rating: [[9]]" + "y" * 10 * MAX_PARSED_CHARS) == 9.0


def test_pairwise_consistency() -> None:
    assert consistent("a", "b") == "a"  # A better in both orders (swapped: the other answer is B)
    assert consistent("b", "a") == "b"
    assert consistent("a", "a") == "tie"  # position bias: the first place wins both times
    assert consistent("tie", "a") == "tie"
    assert consistent(None, "a") is None
    assert PAIR.verdict("[[C]]") == "tie" and PAIR.verdict("[[D]]") is None


@pytest.mark.parametrize(
    "bad",
    [{"regex": "no group"}, {"regex": "(a)(b)"}, {"regex": "(["}, {"regex": "(a)", "min": 5, "max": 1}, None],
)
def test_bad_rules_are_one_line_errors(bad: object) -> None:
    with pytest.raises(PlanError) as e:
        ParseRule.from_dict(bad, "single")
    assert "\n" not in str(e.value) and "judge.parse" in str(e.value)


def test_nested_quantifier_rule_is_refused_at_compile() -> None:
    with pytest.raises(PlanError, match=r"judge.parse.regex: nested quantifiers"):
        ParseRule.from_dict({"regex": r"Rating: ((\d+)+)$"}, "single")


def test_fallback_is_searched_only_when_the_regex_matches_nowhere() -> None:
    parse = {"regex": r"\[\[(\d+)\]\]", "fallback": r"\[(\d+)\]", "min": None, "max": None}
    rule = ParseRule.from_dict(parse, "single")
    assert rule.grade("step [2], Rating: [[9]]") == 9.0 and rule.grade("I give it [3]") == 3.0
    assert rule.grade("Rating: [[0]]") == 0.0 and rule.grade("[[11]]") == 11.0  # no range: as given
    assert rule.to_dict()["fallback"] == r"\[(\d+)\]" and "fallback" not in SINGLE.to_dict()  # old hashes kept


@pytest.mark.parametrize(
    ("parse", "why"),
    [
        ({"regex": r"\[\[(\d+)\]\]", "fallback": r"\[\d+\]"}, "judge.parse.fallback: needs exactly one group"),
        ({"regex": r"\[\[(\d+)\]\]", "fallback": 3}, "judge.parse.fallback: a regular expression"),
        ({"regex": r"\[\[(A|B)\]\]", "labels": {"A": "a", "B": "b"}, "label_order": "yes"}, "label_order: true or"),
    ],
)
def test_bad_fallback_or_label_order_is_one_line(parse: dict[str, object], why: str) -> None:
    mode = "pairwise" if "labels" in parse else "single"
    with pytest.raises(PlanError, match=why):
        ParseRule.from_dict(parse, mode)


def test_label_order_reads_verdicts_as_fastchat() -> None:
    ordered = ParseRule.from_dict({"regex": PAIR.regex, "labels": PAIR.labels, "label_order": True}, "pairwise")
    assert PAIR.verdict("not [[B]] but [[A]]") == "b" and ordered.verdict("not [[B]] but [[A]]") == "a"
    assert ordered.verdict("[[C]] then [[B]]") == "b" and ordered.verdict("none") is None
