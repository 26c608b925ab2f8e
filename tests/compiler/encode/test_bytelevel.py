"""``encode.bytelevel``: plain ASCII texts pre-tokenized in Python give the tokenizer's own ids, and every other
text is left to the tokenizer."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest


@pytest.fixture(scope="module")
def backend() -> Any:
    from tokenizers import Tokenizer

    from lmeval.common.tinymodel import ensure_tiny_model

    return Tokenizer.from_file(str(ensure_tiny_model() / "tokenizer.json"))


def _added(backend: Any) -> list[str]:
    import json

    return [t["content"] for t in json.loads(backend.to_str())["added_tokens"]]


def test_plain_ascii_texts_get_the_tokenizers_own_ids(backend: Any) -> None:
    """Random texts over every printable ASCII character, tabs, newlines, runs of spaces, digits, contractions
    (the GPT-2 regex's cases), each against ``encode(text, add_special_tokens=False)``."""
    from lmeval.compiler.encode.bytelevel import ByteLevelWords

    words = ByteLevelWords.of(backend, _added(backend))
    assert words is not None
    rnd = random.Random(50)
    alphabet = [*string.printable[:95], " ", "  ", "   ", "\n", "\n\n", "\t", " \n", "'s", "'t", "'re", "'ve", "'m",
                "'ll", "'d", "'S", "x's", "12", "3.5", "Word", "?!", "...", " (A)", "\nAnswer:"]  # fmt: skip
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(8000)]
    got = words.encode(texts)
    want = [e.ids for e in backend.encode_batch(texts, add_special_tokens=False)]
    assert got == want
    assert words.encode(texts) == want  # again, from the pre-token cache


@pytest.mark.parametrize("text", ["caf\u00e9", "a\rb", "a\x0bb", "a\x0cb", "a\x1cb", "\u00a0", "x<|im_start|>y"])
def test_other_texts_are_left_to_the_tokenizer(backend: Any, text: str) -> None:
    from lmeval.compiler.encode.bytelevel import ByteLevelWords

    words = ByteLevelWords.of(backend, _added(backend))
    assert words is not None
    assert words.encode([text, "plain text"]) == [None, backend.encode("plain text", add_special_tokens=False).ids]


def test_a_tokenizer_that_pads_is_not_taken(backend: Any) -> None:
    from tokenizers import Tokenizer

    from lmeval.compiler.encode.bytelevel import ByteLevelWords

    padded = Tokenizer.from_str(backend.to_str())
    padded.enable_padding(length=64)
    assert ByteLevelWords.of(padded, _added(padded)) is None
