"""Document fields a prompt renders as ``None``: a field missing from a data row (the loader fills it with None,
as ``datasets`` does) or null in it, printed by a template's ``{{ name }}``. lm-eval renders ``Question: None?``
without a word; the compiler renders the same bytes (parity) and says so: one ``NullField`` per task, prompt
field and document field, with the number of evaluation documents and the first one's id. ``lmeval compile``
prints each as a one-line warning; under ``run.strict_fields=true`` the first is a compile error (exit 2).

The counts travel with a task's build (``BuiltTask``, ``TaskPart``, the build-cache entry), so a cached or
forked build warns exactly as a fresh one does. They never reach the plan: its bytes and hash do not move."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lmeval.compiler.errors import where


@dataclass(frozen=True)
class NullField:
    file: str  # the evaluation split's data file (or the dataset, when it is not read from a local file)
    task: str
    field: str  # the prompt field: doc_to_text, doc_to_target, doc_to_choice, description, gen_prefix
    data_field: str  # the document field(s) that were None ("" when the None came from an expression)
    count: int  # evaluation documents affected
    first_doc: int

    def message(self, strict: bool = False) -> str:
        what = f"document field {self.data_field!r}" if self.data_field else "a value"
        tail = (
            "refused under run.strict_fields=true"
            if strict
            else "rendered as 'None', as lm-eval does (run.strict_fields=true refuses it)"
        )
        loc = where(file=self.file, task=self.task, field=self.field)
        return f"{loc}: {what} is missing or null in {self.count} document(s), first doc {self.first_doc}; {tail}"

    def to_list(self) -> list[Any]:
        return [self.file, self.task, self.field, self.data_field, self.count, self.first_doc]

    @staticmethod
    def from_list(v: Any) -> NullField:
        file, task, fld, data_field, count, first = v
        if not all(type(x) is str for x in (file, task, fld, data_field)) or not all(
            type(x) is int and x >= 0 for x in (count, first)
        ):
            raise ValueError("malformed null-field count")
        return NullField(file, task, fld, data_field, count, first)


class NullCounter:
    """Per (prompt field, document fields): [documents, first doc id, last doc id counted]. A document is
    counted once per field even when rendered twice (lm-eval's probe renders the first document again)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], list[int]] = {}

    def add(self, field: str, names: list[str], doc: dict[str, Any], doc_id: int) -> None:
        data_field = ", ".join(n for n in names if n in doc and doc[n] is None)
        hit = self.seen.get((field, data_field))
        if hit is None:
            self.seen[(field, data_field)] = [1, doc_id, doc_id]
        elif hit[2] != doc_id:
            hit[0] += 1
            hit[2] = doc_id

    def fields(self, file: str, task: str) -> list[NullField]:
        return [NullField(file, task, f, d, c, first) for (f, d), (c, first, _) in self.seen.items()]
