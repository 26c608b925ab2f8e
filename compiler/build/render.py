"""doc_to_text / doc_to_target / doc_to_choice evaluation, as lm-eval 0.4.13 does it.

A field is a document key, a Jinja2 template (jinja2's SandboxedEnvironment, StrictUndefined,
keep_trailing_newline, lm-eval's ``regex_replace`` filter), a literal (int, list, dict) or a Python
function. Templates are compiled once per task and field, not per document.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox

from lmeval.common import deadline
from lmeval.compiler.build.bounded import (
    HOOK_SECONDS,
    TASK_RENDER_SECONDS,
    Bounded,
    BoundedEnvironment,
    render_bounded,
)
from lmeval.compiler.build.nullfields import NullCounter
from lmeval.compiler.build.plaintemplate import plain_template, render_plain
from lmeval.compiler.errors import fail
from lmeval.compiler.tasks import FunctionRef, resolve


def regex_replace(string: str, pattern: str, repl: str, count: int = 0) -> str:
    return re.sub(pattern, repl, string, count=count)


# Sandboxed: a task file is data, so a template reaches no Python internals (``cycler.__init__.__globals__``,
# ``''.__class__.__mro__``); every lm-eval template renders the same bytes in it (tests/parity, the lock test).
# Bounded (compiler/build/bounded.py): no template can make the compiler run out of memory or time.
# Every ``{{ }}`` output passes ``_finalize`` unchanged (the same bytes); it counts the Nones printed, so a
# document field missing or null in the data is reported (compiler/build/nullfields.py), not rendered silently.
_NONES = [0]


def _finalize(value: Any) -> Any:
    if value is None:
        _NONES[0] += 1
    return value


_ENV = BoundedEnvironment(
    loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined, keep_trailing_newline=True, finalize=_finalize
)
_ENV.filters["regex_replace"] = regex_replace
_ENV.bound_filters()
_TEMPLATES: dict[str, jinja2.Template] = {}
_CONSTANT: dict[str, str] = {}  # templates without any Jinja syntax (lm-eval's descriptions) -> their output
_NAMES: dict[str, list[str]] = {}  # template -> the variables it reads (for naming a None it printed)


def _names(text: str) -> list[str]:
    names = _NAMES.get(text)
    if names is None:
        names = _NAMES[text] = sorted(jinja2.meta.find_undeclared_variables(_ENV.parse(text)))
    return names


def compile_template(text: str, *, task: str, field: str, source: str | None) -> jinja2.Template:
    t = _TEMPLATES.get(text)
    if t is None:
        try:
            t = _ENV.from_string(text)
        except jinja2.TemplateSyntaxError as e:
            raise fail(
                f"Jinja template syntax error: {e.message} (template line {e.lineno})",
                file=source,
                task=task,
                field=field,
            ) from None
        except (ValueError, RecursionError, MemoryError) as e:  # e.g. an integer literal of 5000 digits
            raise fail(
                f"Jinja template cannot be compiled: {type(e).__name__}: {_first_line(e)}",
                file=source,
                task=task,
                field=field,
            ) from None
        _TEMPLATES[text] = t
    return t


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    if isinstance(e, ValueError) and text.startswith("Exceeds the limit"):
        return "an integer of more than 4300 digits"
    return text.splitlines()[0][:300] if text else ""


class Renderer:
    """Evaluates a task's text fields against documents, with errors naming task, field and doc id."""

    def __init__(self, task: str, source: str | None, features: list[str], has_choice: bool) -> None:
        self.task = task
        self.source = source
        self.features = set(features)
        self.has_choice = has_choice
        self.render_seconds = 0.0  # all of this task's renderings so far (bounded by TASK_RENDER_SECONDS)
        self.nulls = NullCounter()  # evaluation documents whose template printed a None

    def _err(self, field: str, doc_id: int | None, msg: str) -> Exception:
        return fail(msg, file=self.source, task=self.task, field=field, doc_id=doc_id)

    def _template(self, text: str, field: str, doc: dict[str, Any], doc_id: int | None) -> str:
        t = compile_template(text, task=self.task, field=field, source=self.source)
        if "{" not in text:  # no tag, expression or comment (line statements are off): the same for every doc
            hit = _CONSTANT.get(text)
            if hit is None:
                hit = _CONSTANT[text] = t.render()
            return hit
        parts = plain_template(text)
        if parts is not None:
            plain = render_plain(parts, doc)
            if plain is not None:
                return plain
        start = time.monotonic()
        nones = _NONES[0]
        try:
            out = render_bounded(t, doc)
            if _NONES[0] != nones and doc_id is not None:
                self.nulls.add(field, _names(text), doc, doc_id)
            return out
        except Bounded as e:
            raise self._err(field, doc_id, f"template exceeds a bound: {e}") from None
        except jinja2.sandbox.SecurityError as e:
            raise self._err(field, doc_id, f"template refused by the sandbox: {e}") from None
        except jinja2.UndefinedError as e:
            raise self._err(field, doc_id, f"template refers to an undefined variable: {e.message}") from None
        except Exception as e:  # noqa: BLE001 - any error inside a template is about this doc
            raise self._err(field, doc_id, f"template failed: {type(e).__name__}: {_first_line(e)}") from None
        finally:
            self.render_seconds += time.monotonic() - start
            if self.render_seconds > TASK_RENDER_SECONDS:
                raise self._err(field, doc_id, f"the task's templates took more than {TASK_RENDER_SECONDS:g} s")

    def _call(self, ref: FunctionRef, field: str, doc: dict[str, Any], doc_id: int | None) -> Any:
        fn: Callable[..., Any] = resolve(ref, task=self.task, field=field)
        try:
            with deadline(HOOK_SECONDS, f"function {ref.qualname}", Bounded):
                return fn(doc)
        except Bounded as e:
            raise self._err(field, doc_id, str(e)) from None
        except Exception as e:  # noqa: BLE001
            raise self._err(
                field, doc_id, f"function {ref.qualname} failed: {type(e).__name__}: {_first_line(e)}"
            ) from None

    def resolve_field(self, value: Any, doc: dict[str, Any], field: str, doc_id: int | None) -> Any:
        """lm-eval's ``Task.resolve_field`` (description, gen_prefix): a doc key or a template."""
        if value:
            if value in doc:
                return doc[value]
            return self._template(value, field, doc, doc_id)
        return None

    def prefix(self, value: str | None, doc: dict[str, Any], doc_id: int | None) -> str | None:
        """``doc_to_prefix``: gen_prefix as a feature name or a template."""
        if value is None:
            return None
        if value in self.features:
            return doc[value]  # type: ignore[no-any-return]
        return self._template(value, "gen_prefix", doc, doc_id)

    def text(self, value: Any, doc: dict[str, Any], doc_id: int | None, field: str = "doc_to_text") -> Any:
        return self._value(value, doc, doc_id, field, target=False)

    def target(self, value: Any, doc: dict[str, Any], doc_id: int | None, field: str = "doc_to_target") -> Any:
        """As ``text``, and a target may also be a list, or a template rendering a Python list literal."""
        return self._value(value, doc, doc_id, field, target=True)

    def _value(self, value: Any, doc: dict[str, Any], doc_id: int | None, field: str, target: bool) -> Any:
        """lm-eval's ``doc_to_text``/``doc_to_target``: an int as is, a feature name, a template (a digit
        string with choices is an index), or a function."""
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            if value in self.features:
                return self._get(doc, value, field, doc_id)
            out = self._template(value, field, doc, doc_id)
            if self.has_choice and out.isdigit():
                if len(out) > 18:
                    raise self._err(field, doc_id, f"renders a choice index of {len(out)} digits")
                return ast.literal_eval(out)
            if target and len(out) >= 2 and out[0] == "[" and out[-1] == "]":
                try:
                    return ast.literal_eval(out)
                except (SyntaxError, ValueError):
                    return out
            return out
        if target and isinstance(value, list):
            return value
        if isinstance(value, FunctionRef):
            return self._call(value, field, doc, doc_id)
        raise self._err(field, doc_id, f"unsupported value of type {type(value).__name__}")

    def choice(self, value: Any, doc: dict[str, Any], doc_id: int | None, field: str = "doc_to_choice") -> list[Any]:
        if isinstance(value, str):
            if value in self.features:
                out = self._get(doc, value, field, doc_id)
            else:
                rendered = self._template(value, field, doc, doc_id)
                try:
                    out = ast.literal_eval(rendered)
                except (SyntaxError, ValueError):
                    raise self._err(
                        field, doc_id, f"template must render a Python list literal, got {rendered[:80]!r}"
                    ) from None
        elif isinstance(value, list):
            out = value
        elif isinstance(value, dict):
            out = list(value.values())
        elif isinstance(value, FunctionRef):
            out = self._call(value, field, doc, doc_id)
        else:
            raise self._err(field, doc_id, f"unsupported value of type {type(value).__name__}")
        if not isinstance(out, list | tuple):
            raise self._err(field, doc_id, f"must give a list of choices, got {type(out).__name__}")
        return list(out)

    def _get(self, doc: dict[str, Any], key: str, field: str, doc_id: int | None) -> Any:
        try:
            return doc[key]
        except KeyError:
            raise self._err(field, doc_id, f"document has no field {key!r}") from None
