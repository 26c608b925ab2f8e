"""Bounded template rendering: Jinja's sandbox keeps templates away from Python internals; this bounds what they
can cost. A task file is data, so a template cannot make the compiler exhaust memory or time:

- operators that grow values (``*``, ``**``, ``+``, ``%``) are intercepted and refused before they would make
  a string or list longer than ``MAX_VALUE_CHARS`` or an integer longer than ``MAX_INT_DIGITS`` digits (so a
  huge integer is a one-line error, never Python's ``Exceeds the limit (4300 digits)``);
- calls (methods, filters) taking an integer argument above ``MAX_VALUE_CHARS`` (``center``, ``ljust``,
  ``indent``, ``wordwrap``) are refused, as are format strings with a width or precision of 7 digits, and a
  ``join`` whose result would be too long;
- a rendering's output is capped at ``MAX_VALUE_CHARS``;
- each rendering, and each compile-time hook call (a ``!function`` field, ``process_docs``), runs under a
  time limit (``lmeval.common.timelimit``), and a task's renderings together under another.

Exceeding one raises ``Bounded``; the renderer turns it into a one-line error naming file, task, field and doc.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

import jinja2.sandbox
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame

MAX_VALUE_CHARS = 4 << 20  # characters of any string a template makes, items of any list, characters rendered
MAX_INT_DIGITS = 4000  # below Python's int/str conversion limit (4300)
_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3219)
RENDER_SECONDS = 10.0  # one field of one document
TASK_RENDER_SECONDS = 600.0  # all of a task's renderings
HOOK_SECONDS = 20.0  # one call of a compile-time function on one document
PROCESS_DOCS_SECONDS = 900.0  # one task's process_docs over its whole split
_WIDE = re.compile(r"\d{7,}")  # a width or precision of a million or more in a format string


class Bounded(Exception):
    """A template or hook went past a bound: the message says which."""


def _size(v: Any) -> int | None:
    return len(v) if isinstance(v, str | list | tuple) else None


def _too_long(n: int) -> Bounded:
    return Bounded(f"would make a value of {n} characters or items, more than the limit of {MAX_VALUE_CHARS}")


def _int_bits(v: Any) -> int:
    return v.bit_length() if type(v) is int else 0


def check_binop(op: str, left: Any, right: Any) -> None:
    """Refuse ``left op right`` before computing it when its result would pass a bound."""
    if op == "*":
        for seq, n in ((left, right), (right, left)):
            size = _size(seq)
            if size is not None and type(n) is int and size * n > MAX_VALUE_CHARS:
                raise _too_long(size * n)
        if _int_bits(left) + _int_bits(right) > _MAX_INT_BITS:
            raise Bounded(f"would make an integer of more than {MAX_INT_DIGITS} digits")
    elif op == "**":
        if type(left) is int and type(right) is int and right > 0 and abs(left) > 1:
            if left.bit_length() * right > _MAX_INT_BITS:
                raise Bounded(f"would make an integer of more than {MAX_INT_DIGITS} digits")
    elif op == "+":
        a, b = _size(left), _size(right)
        if a is not None and b is not None and a + b > MAX_VALUE_CHARS:
            raise _too_long(a + b)
    elif op == "%" and isinstance(left, str) and _WIDE.search(left):
        raise Bounded("a format string with a width or precision of a million or more")


def check_call_args(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for v in (*args, *kwargs.values()):
        if type(v) is int and abs(v) > MAX_VALUE_CHARS:
            raise Bounded(f"{name}() with an argument of {_digits(v)}, more than the limit of {MAX_VALUE_CHARS}")
        if type(v) is str and name in ("format", "format_map") and _WIDE.search(v):
            raise Bounded("a format string with a width or precision of a million or more")


def check_join(sep: Any, items: Any) -> None:
    if isinstance(sep, str) and isinstance(items, list | tuple):
        total = len(sep) * max(len(items) - 1, 0) + sum(len(x) for x in items if isinstance(x, str))
        if total > MAX_VALUE_CHARS:
            raise _too_long(total)


def _digits(v: int) -> str:
    return str(v) if v.bit_length() < 64 else f"about {int(v.bit_length() * 0.30103)} digits"


def check_result(value: Any) -> Any:
    size = _size(value)
    if size is not None and size > MAX_VALUE_CHARS:
        raise _too_long(size)
    if type(value) is int and value.bit_length() > _MAX_INT_BITS:
        raise Bounded(f"made an integer of more than {MAX_INT_DIGITS} digits")
    return value


def _bounded_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        check_call_args(name, args[1:], kwargs)
        if name == "format" and args and isinstance(args[0], str) and _WIDE.search(args[0]):
            raise Bounded("a format string with a width or precision of a million or more")
        if name == "join" and len(args) >= 2:
            seq = args[1]
            check_join(args[2] if len(args) > 2 else kwargs.get("d", ""), list(seq) if not isinstance(seq, str) else [])
        return check_result(fn(*args, **kwargs))

    for attr in ("jinja_pass_arg",):
        if hasattr(fn, attr):
            setattr(wrapper, attr, getattr(fn, attr))
    return wrapper


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with ``~`` (string concatenation) through ``environment.bounded_concat``."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BoundedEnvironment(jinja2.sandbox.SandboxedEnvironment):
    """``SandboxedEnvironment`` with the bounds above on operators, calls, filters and str.format."""

    intercepted_binops = frozenset({"*", "**", "+", "%", "//"})
    code_generator_class = _BoundedCodeGenerator

    @staticmethod
    def bounded_concat(parts: tuple[Any, ...]) -> str:
        texts = [p if type(p) is str else str(p) for p in parts]
        n = sum(map(len, texts))
        if n > MAX_VALUE_CHARS:
            raise _too_long(n)
        return "".join(texts)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.binop_table = dict(self.binop_table)
        self.binop_table.setdefault("//", operator.floordiv)

    def bound_filters(self) -> None:
        """Wrap every filter (call after adding the environment's own)."""
        self.filters = {n: _bounded_filter(n, f) for n, f in self.filters.items()}

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        check_binop(operator, left, right)
        return check_result(self.binop_table[operator](left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - jinja's
        inner = getattr(__obj, "__wrapped__", __obj)
        owner = getattr(inner, "__self__", None)
        if isinstance(owner, str | list | tuple | bytes):  # the methods that can grow a value (center, ljust...)
            name = getattr(inner, "__name__", "") or ""
            check_call_args(name, args, kwargs)
            if name == "join" and args:
                check_join(owner, args[0] if isinstance(args[0], list | tuple) else [])
        return check_result(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        owner = getattr(value, "__self__", None)
        if (
            isinstance(owner, str)
            and _WIDE.search(owner)
            and getattr(value, "__name__", "") in ("format", "format_map")
        ):

            def refuse(*args: Any, **kwargs: Any) -> str:
                raise Bounded("a format string with a width or precision of a million or more")

            return refuse
        return super().wrap_str_format(value)


class ImmutableBoundedEnvironment(BoundedEnvironment):
    """``BoundedEnvironment`` that, as jinja2's ``ImmutableSandboxedEnvironment``, also refuses the methods that
    change a list, dict or set (the judge's rubric, question and reference templates)."""

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        return not jinja2.sandbox.modifies_known_mutable(obj, attr)


def render_bounded(template: Any, context: dict[str, Any], what: str = "the template") -> str:
    """``template`` rendered under every bound above: its output capped (``render_capped``) and its time limited
    to ``RENDER_SECONDS`` (``Bounded`` past either). Task templates and the judge's templates alike."""
    from lmeval.common import deadline

    with deadline(RENDER_SECONDS, what, Bounded):
        return render_capped(template, context)


def render_capped(template: Any, context: dict[str, Any]) -> str:
    """``template.render(**context)``, stopping once the output passes ``MAX_VALUE_CHARS``."""
    out: list[str] = []
    n = 0
    for chunk in template.generate(**context):
        n += len(chunk)
        if n > MAX_VALUE_CHARS:
            raise Bounded(f"renders more than {MAX_VALUE_CHARS} characters")
        out.append(chunk)
    return "".join(out)
