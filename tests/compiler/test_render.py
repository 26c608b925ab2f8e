"""The renderer's shortcut for ``{{ name }}`` / ``{{ name[N] }}`` templates gives exactly what Jinja gives,
and leaves everything it cannot decide (non-strings, literals, missing fields, bad indices) to Jinja."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import pytest

from lmeval.compiler.errors import CompileError
from lmeval.compiler.render import Renderer, direct_string, field_ref

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _jinja(text: str, doc: dict[str, Any]) -> str:
    return _ENV.from_string(text).render(**doc)


def _rows(path: Path, n: int) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(next(f)) for _ in range(n)]


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("{{answer}}", ("answer", None)),
        ("{{ answer }}", ("answer", None)),
        ("{{targets[0]}}", ("targets", 0)),
        ("{{ choices[ -1 ] }}", ("choices", -1)),
        ("{{true}}", None),
        ("{{None}}", None),
        ("{{self}}", None),
        ("{{answer}}\n", None),
        (" {{answer}}", None),
        ("{{answer.strip()}}", None),
        ("{{choices.text[0]}}", None),
        ("{{a}}{{b}}", None),
        ("{{answer|upper}}", None),
    ],
)
def test_field_ref_recognises_only_plain_references(text: str, ref: tuple[str, int | None] | None) -> None:
    assert field_ref(text) == ref


def test_shortcut_equals_jinja_on_real_rows(data: Path) -> None:
    cases = [
        (data / "gsm8k" / "test.jsonl", ["{{answer}}", "{{ question }}"]),
        (data / "triviaqa" / "validation_sample.jsonl", ["{{question}}"]),
        (data / "mmlu" / "test.jsonl", ["{{question}}", "{{choices[0]}}", "{{choices[-1]}}", "{{choices[3]}}"]),
    ]
    checked = 0
    for path, templates in cases:
        for doc in _rows(path, 50):
            for text in templates:
                ref = field_ref(text)
                assert ref is not None
                fast = direct_string(ref, doc)
                assert fast is not None and fast == _jinja(text, doc)
                checked += 1
    assert checked == 50 * 7


@pytest.mark.parametrize(
    "doc",
    [
        {"x": 3},  # int: Jinja's str()
        {"x": None},  # renders "None"
        {"x": ["a"]},  # a list renders as its repr
        {"x": {"k": "v"}},
        {"x": ("a", "b")},  # a tuple is not indexed by the shortcut
    ],
)
def test_non_strings_go_through_jinja(doc: dict[str, Any]) -> None:
    r = Renderer("t", "t.yaml", [], has_choice=False)
    assert direct_string(("x", None), doc) is None
    assert r.text("{{x}}", doc, 0) == _jinja("{{x}}", doc)


def test_indexing_falls_back_and_errors_like_jinja() -> None:
    r = Renderer("t", "t.yaml", [], has_choice=False)
    assert direct_string(("xs", 5), {"xs": ["a"]}) is None
    assert direct_string(("xs", 0), {"xs": [1]}) is None
    assert r.target("{{xs[0]}}", {"xs": [7, 8]}, 0) == _jinja("{{xs[0]}}", {"xs": [7, 8]})
    assert r.target("{{s[0]}}", {"s": "hello"}, 0) == "h"  # a string is indexed by Jinja, not the shortcut
    with pytest.raises(CompileError, match="undefined variable"):
        r.text("{{missing}}", {"other": "x"}, 3)
    with pytest.raises(CompileError, match="undefined variable"):
        r.text("{{xs[4]}}", {"xs": ["a"]}, 3)


def test_digit_strings_still_become_indices_for_choice_tasks() -> None:
    r = Renderer("t", "t.yaml", [], has_choice=True)
    assert r.target("{{label}}", {"label": "2"}, 0) == 2
    assert r.target("{{label}}", {"label": "[1, 2]"}, 0) == [1, 2]
