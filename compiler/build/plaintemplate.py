"""Plain templates: literal text and document references only, rendered without Jinja when every value is a string.

A plain template is literal text (no ``{``, ``}`` or ``\\r``: no other tag can hide in it, and Jinja's lexer
changes no newline in it) between expression tags of three forms: ``{{ name }}``, ``{{ name[N] }}`` and
``{{ name.strip() }}`` (lm-eval's MMLU prompt: ``{{question.strip()}}\\nA. {{choices[0]}}...``). When each
``name`` is a key of the document whose value (element ``N`` of a list, for the second form) is a ``str``, the
sandboxed Jinja environment renders each tag as that string (``str.strip`` of it, for the third) and the
literal text unchanged, so ``render_plain`` joins them itself. Anything else (a missing key, which may be a
Jinja global or an error; a non-string; an index out of range; an output over ``MAX_VALUE_CHARS``, which Jinja
refuses) gives None, and Jinja decides. The compiler still compiles every template with Jinja first, so a
syntax error is reported as before.
"""

from __future__ import annotations

import re
from typing import Any

from lmeval.compiler.build.bounded import MAX_VALUE_CHARS

# a reference: (name, index or None, ".strip()" applied)
Ref = tuple[str, int | None, bool]
Part = str | Ref

_TAG = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*(-?[0-9]+)\s*\]|(\.strip\(\)))?\s*\}\}")
_JINJA_LITERALS = frozenset({"true", "false", "none", "True", "False", "None", "self"})  # and render(self=...)
_PLAIN: dict[str, tuple[Part, ...] | None] = {}


def plain_template(text: str) -> tuple[Part, ...] | None:
    """The parts of ``text`` (literal strings and references, in order) when it is a plain template, else None."""
    if text in _PLAIN:
        return _PLAIN[text]
    parts: list[Part] = []
    pos = 0
    ok = True
    for m in _TAG.finditer(text):
        if m[1] in _JINJA_LITERALS:
            ok = False
            break
        if m.start() > pos:
            parts.append(text[pos : m.start()])
        parts.append((m[1], None if m[2] is None else int(m[2]), m[3] is not None))
        pos = m.end()
    if pos < len(text):
        parts.append(text[pos:])
    if ok:
        ok = any(isinstance(p, tuple) for p in parts) and not any(
            isinstance(p, str) and ("{" in p or "}" in p or "\r" in p) for p in parts
        )
    result = tuple(parts) if ok else None
    _PLAIN[text] = result
    return result


def field_ref(text: str) -> tuple[str, int | None] | None:
    """``(name, index)`` when ``text`` is exactly ``{{ name }}`` or ``{{ name[index] }}``, else None."""
    parts = plain_template(text)
    if parts is None or len(parts) != 1:
        return None
    ref = parts[0]
    if isinstance(ref, str) or ref[2]:
        return None
    return ref[0], ref[1]


def direct_string(ref: tuple[str, int | None], doc: dict[str, Any]) -> str | None:
    """The string ``{{ name }}`` / ``{{ name[index] }}`` renders to, when it is a string field (or a string
    element of a list field) of ``doc``; None when Jinja has to decide."""
    value = doc.get(ref[0])
    index = ref[1]
    if index is not None:
        if type(value) is not list or not -len(value) <= index < len(value):
            return None
        value = value[index]
    return value if type(value) is str else None


def render_plain(parts: tuple[Part, ...], doc: dict[str, Any]) -> str | None:
    """What Jinja renders a plain template's ``parts`` to against ``doc``, or None when Jinja has to decide."""
    out: list[str] = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
            continue
        name, index, strip = p
        value = direct_string((name, index), doc)
        if value is None:
            return None
        out.append(value.strip() if strip else value)
    text = "".join(out)
    return text if len(text) <= MAX_VALUE_CHARS else None
