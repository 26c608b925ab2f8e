"""The shared encoding rule (plans/plan/tokenization.py) and its record in the plan header."""

from __future__ import annotations

from lmeval.plans.plan import ModelInfo, PlanHeader
from lmeval.plans.plan.tokenization import (
    TokenRule,
    add_special_tokens,
    choose_prefix_token,
    empty_context_pair,
    encode_pairs,
    encode_texts,
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


def _chars(calls: list[tuple[list[str], bool]]):  # type: ignore[no-untyped-def]
    """A character tokenizer (id = code point) whose special tokens are BOS 1 before the text."""

    def encode(texts: list[str], flag: bool) -> list[list[int]]:
        calls.append((list(texts), flag))
        return [([1] if flag else []) + [ord(c) for c in t] for t in texts]

    return encode


def test_texts_and_pairs_follow_the_rule_over_any_batch_encoder() -> None:
    rule = TokenRule(add_bos_token=None, prefix_token_id=1, prefix_text="<s>")
    calls: list[tuple[list[str], bool]] = []
    enc = _chars(calls)
    # one call per flag, results in input order; a text starting with the prefix text gets no second BOS
    assert encode_texts(["ab", "<s>c", "d"], rule, enc) == [[1, 97, 98], [60, 115, 62, 99], [1, 100]]
    assert calls == [(["ab", "d"], True), (["<s>c"], False)]
    assert encode_texts(["ab"], rule, enc, special=False) == [[97, 98]]
    pairs = [("Q: ", "x"), ("Q: ", "y"), ("", "z"), ("", "\x01w")]
    calls.clear()
    out = encode_pairs(pairs, rule, enc)
    # the space moves to the continuation; the context is encoded once; an empty context is conditioned on
    # the prefix token unless the continuation starts with it
    assert out == [([1, 81, 58], [32, 120]), ([1, 81, 58], [32, 121]), ([1], [122]), ([1], [119])]
    assert calls[0] == (["Q:"], True)
    # a faster continuation path is used when it answers, skipped when it returns None
    assert encode_pairs(pairs, rule, enc, lambda ctxs, conts: [[7]] * len(ctxs))[:2] == [([1, 81, 58], [7])] * 2
    assert encode_pairs(pairs, rule, enc, lambda ctxs, conts: None) == out
