"""The renderer's shortcut for ``{{ name }}`` / ``{{ name[N] }}`` templates gives exactly what Jinja gives,
and leaves everything it cannot decide (non-strings, literals, missing fields, bad indices) to Jinja."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest

from lmeval.compiler.build.plaintemplate import direct_string, field_ref, plain_template, render_plain
from lmeval.compiler.build.render import Renderer
from lmeval.compiler.errors import CompileError

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
    assert _checked_on_rows(cases, 50, _field_fast, _jinja) == 50 * 7


def _field_fast(text: str, doc: dict[str, Any]) -> str | None:
    ref = field_ref(text)
    assert ref is not None
    return direct_string(ref, doc)


def _plain_fast(text: str, doc: dict[str, Any]) -> str | None:
    parts = plain_template(text)
    assert parts is not None
    return render_plain(parts, doc)


def _checked_on_rows(
    cases: list[tuple[Path, list[str]]],
    n: int,
    fast: Callable[[str, dict[str, Any]], str | None],
    ref: Callable[[str, dict[str, Any]], str],
) -> int:
    """How many (row, template) pairs of the first ``n`` rows of each file ``fast`` rendered as ``ref`` does
    (asserting each)."""
    checked = 0
    for path, templates in cases:
        for doc in _rows(path, n):
            for text in templates:
                got = fast(text, doc)
                assert got is not None and got == ref(text, doc), (path.name, text)
                checked += 1
    return checked


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


_MMLU = "{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\nD. {{choices[3]}}\nAnswer:"


def _sandboxed(text: str, doc: dict[str, Any]) -> str:
    """What the compiler's own (sandboxed, bounded) Jinja environment renders."""
    from lmeval.compiler.build.render import compile_template

    return compile_template(text, task="t", field="f", source=None).render(**doc)


def test_plain_templates_equal_jinja_on_real_rows(data: Path) -> None:
    """The plain-template path (literal text and references, MMLU's prompt among them) renders every real row of
    several datasets exactly as the sandboxed Jinja environment does."""
    cases = [
        (data / "mmlu" / "abstract_algebra" / "test.jsonl", [_MMLU, "{{question}}\n{{choices[-1]}} x"]),
        (data / "mmlu" / "high_school_us_history" / "test.jsonl", [_MMLU]),
        (data / "boolq" / "validation.jsonl", ["{{passage}}\nQuestion: {{question}}?\nAnswer:"]),
        (data / "gsm8k" / "test.jsonl", ["Question: {{question}}\nAnswer:", " {{ answer.strip() }}\n\n"]),
    ]
    assert _checked_on_rows(cases, 60, _plain_fast, _sandboxed) == 60 * 6


@pytest.mark.parametrize(
    "text",
    [
        "{{a}}{% if b %}x{% endif %}",  # a block tag
        "{{a}} {# comment #}",
        "{{- a }}",  # whitespace control
        "{{a}}\r\n",  # Jinja's lexer turns \r\n into \n in literal text
        "{{a}} }",
        "{{a|upper}}",
        "{{a.upper()}}",
        "{{a.strip( )}}",
        "{{a[0].strip()}}",
        "{{None}} {{a}}",
        "no tag",
    ],
)
def test_only_plain_templates_are_recognised(text: str) -> None:
    assert plain_template(text) is None


@pytest.mark.parametrize(
    "doc",
    [
        {"q": 3, "xs": ["a"]},  # an int: Jinja's str()
        {"q": " a ", "xs": [1]},  # an int element
        {"q": " a ", "xs": []},  # index out of range: Jinja's error
        {"xs": ["a"]},  # missing: undefined, or a Jinja global
        {"q": ["a"], "xs": ["a"]},  # .strip() of a list: Jinja's error
    ],
)
def test_plain_templates_leave_other_values_to_jinja(doc: dict[str, Any]) -> None:
    parts = plain_template("{{q.strip()}}: {{xs[0]}}")
    assert parts == (("q", None, True), ": ", ("xs", 0, False))
    assert render_plain(parts, doc) is None
    r = Renderer("t", "t.yaml", [], has_choice=False)
    try:
        want: str | None = _sandboxed("{{q.strip()}}: {{xs[0]}}", doc)
    except jinja2.UndefinedError:
        want = None
    if want is None:
        with pytest.raises(CompileError):
            r.text("{{q.strip()}}: {{xs[0]}}", doc, 0)
    else:
        assert r.text("{{q.strip()}}: {{xs[0]}}", doc, 0) == want


def test_plain_template_output_over_the_cap_is_refused_like_jinja() -> None:
    from lmeval.compiler.build.bounded import MAX_VALUE_CHARS

    doc = {"q": "x" * MAX_VALUE_CHARS}
    parts = plain_template("{{q}}!")
    assert parts is not None and render_plain(parts, doc) is None
    with pytest.raises(CompileError, match="exceeds a bound"):
        Renderer("t", "t.yaml", [], has_choice=False).text("{{q}}!", doc, 0)
