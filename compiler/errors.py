"""Compile errors: bad configs, templates or data. One line naming file, task, field and doc id."""

from __future__ import annotations

from lmeval.plans import UserError


class CompileError(UserError):
    """A task config, template, data file or override that cannot be compiled into a plan."""


def where(
    *,
    file: str | None = None,
    task: str | None = None,
    field: str | None = None,
    doc_id: int | None = None,
    line: int | None = None,
) -> str:
    """The ``file:line: task X, field Y, doc N`` prefix of a compile error message."""
    parts = []
    if file is not None:
        parts.append(f"{file}:{line}" if line is not None else file)
    inner = []
    if task is not None:
        inner.append(f"task {task}")
    if field is not None:
        inner.append(f"field {field}")
    if doc_id is not None:
        inner.append(f"doc {doc_id}")
    if inner:
        parts.append(", ".join(inner))
    return ": ".join(parts)


def fail(msg: str, **loc: object) -> CompileError:
    prefix = where(**loc)  # type: ignore[arg-type]
    text = f"{prefix}: {msg}" if prefix else msg
    return CompileError(" ".join(text.split("\n")))
