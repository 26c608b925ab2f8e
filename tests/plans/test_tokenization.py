"""The shared encoding rule (plans/tokenization.py) and its record in the plan header."""

from __future__ import annotations

from lmeval.plans.records import ModelInfo, PlanHeader
from lmeval.plans.tokenization import (
    TokenRule,
    add_special_tokens,
    choose_prefix_token,
    empty_context_pair,
    move_trailing_space,
)


def test_special_tokens_follow_add_bos_token_and_never_double_bos() -> None:
    assert add_special_tokens("text", None, "<s>") is True  # unset: the tokenizer's default (on)
    assert add_special_tokens("text", True, "<s>") is True
    assert add_special_tokens("text", False, "<s>") is False
    for flag in (None, True, False):
        assert add_special_tokens("<s>[INST] hi", flag, "<s>") is False
    assert add_special_tokens("<s> text", None, None) is True  # no prefix token text: nothing to test


def test_prefix_token_override_then_bos_then_eos() -> None:
    assert choose_prefix_token(7, 1, 2) == (7, "override")
    assert choose_prefix_token(None, 1, 2) == (1, "bos")
    assert choose_prefix_token(None, None, 2) == (2, "eos")
    assert choose_prefix_token(None, None, None) == (None, "none")
    assert choose_prefix_token(0, None, None) == (0, "override")  # id 0 is a token like any other


def test_pairs() -> None:
    assert move_trailing_space("Answer: \n", "4") == ("Answer:", " \n4")
    assert move_trailing_space("Answer:", " 4") == ("Answer:", " 4")
    assert empty_context_pair(1, [5, 6]) == ([1], [5, 6])
    assert empty_context_pair(1, [1, 6]) == ([1], [6])  # the continuation already starts with it
    assert empty_context_pair(None, [5, 6]) == ([5], [6])


def test_rule_round_trips_through_the_header_and_old_headers_have_none() -> None:
    rule = TokenRule(add_bos_token=None, prefix_token_id=1, prefix_token_source="bos", prefix_text="<s>",
                     special_prefix=[1])  # fmt: skip
    h = PlanHeader(config={}, model=ModelInfo(name="m", add_bos_token=None, token_rule=rule), tasks=[])
    back = PlanHeader.from_dict(h.to_dict())
    assert back.model.token_rule == rule and back.model.add_bos_token is None
    assert "add_special_tokens tokenizer default (adds [1])" in rule.describe()
    old = ModelInfo(name="m").to_dict()
    assert "token_rule" not in old  # headers without a rule keep their bytes (and hashes)
    assert ModelInfo.from_dict(old).token_rule is None
