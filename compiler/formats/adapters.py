"""Where a task's question, choices and gold answer are, for building its other formats.

An adapter names three Jinja pieces over a task's (processed) document: ``question`` (a template fragment:
the question text), ``choices`` (an expression: the list of choice texts) and ``gold`` (an expression: the
gold choice's index), plus the question prefix OLMES uses for the task and the format the task is written
in. The shipped multiple-choice tasks have explicit adapters (``ADAPTERS``, by lm-eval task name; the MMLU
subjects by prefix); any other multiple-choice task gets one derived from its own fields (``derive``) when
they are document fields, single-expression templates or literals, and a one-line error otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.functionref import FunctionRef


@dataclass(frozen=True)
class Adapter:
    question: str  # Jinja fragment: the question's text
    choices: str  # Jinja expression: the choices' texts (a list)
    gold: str  # Jinja expression: the gold choice's index
    prefix: str = "Question: "  # OLMES' question prefix for the task
    written: str = "cf"  # the format the task's own prompts are in: cf (cloze) or mcf (letters)
    # OLMES' cloze normalisation for the task (its Table 3): the CF metric a format comparison reads
    cf_metric: str = "acc_norm"
    partial: bool = False  # the task's cloze is lm-eval's partial scoring (one context per choice): no PMI

    def to_dict(self) -> dict[str, str]:
        return {"question": self.question, "choices": self.choices, "gold": self.gold, "prefix": self.prefix}


_ARC = Adapter("{{question}}", "choices.text", "choices.label.index(answerKey)")  # ARC-Easy: per character
# lm-eval's mmlu is written as letters ("Q\nA. x\nB. y\nAnswer:"); OLMES' MCF has "Question: " and " A." labels
_MMLU = Adapter("{{question.strip()}}", "choices", "answer", written="mcf")

ADAPTERS: dict[str, Adapter] = {
    "arc_easy": _ARC,
    "arc_challenge": replace(_ARC, cf_metric="acc_pmi"),
    # OLMES (catwalk's PiQAStd / PiQAMCStd): the goal after "Goal: "
    "piqa": Adapter("{{goal}}", "[sol1, sol2]", "label", prefix="Goal: "),
    # the passage, then the question; choices in lm-eval's order (no, yes), so the gold stays `label`
    "boolq": Adapter("{{question}}?", "['no', 'yes']", "label", prefix="{{passage}}\nQuestion: ", cf_metric="acc"),
    # the sentence with its blank, the two options (lm-eval's cloze format is partial scoring: kept for @cf)
    "winogrande": Adapter(
        "{{sentence}}", "[option1, option2]", "['1', '2'].index(answer)", cf_metric="acc", partial=True
    ),
    # lm-eval's hellaswag process_docs gives query (activity label: context) and choices (the endings)
    "hellaswag": Adapter("{{query}}", "choices", "label|int", prefix=""),
    # OLMES (catwalk's OpenBookQAMCStd): the question stem
    "openbookqa": Adapter(
        "{{question_stem}}", "choices.text", "choices.label.index(answerKey.lstrip())", cf_metric="acc_pmi"
    ),
}
_MMLU_PREFIX = "mmlu_"


def adapter_for(cfg: dict[str, Any], base: str, source: str | None) -> Adapter:
    """The adapter of task ``base`` (its config ``cfg``, as merged from its YAML)."""
    if base in ADAPTERS:
        return ADAPTERS[base]
    if base.startswith(_MMLU_PREFIX) and cfg.get("dataset_path") in ("cais/mmlu", "hails/mmlu_no_train"):
        return _MMLU
    return derive(cfg, base, source)


_ONE_EXPR = re.compile(r"\{\{\s*(.+?)\s*\}\}", re.S)
_LEAD = re.compile(r"^(Question|Q):\s*")
_TRAIL = re.compile(r"\s*(Answer|A):\s*$")


def derive(cfg: dict[str, Any], base: str, source: str | None) -> Adapter:
    """An adapter from a task's own ``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target``: a document
    field, a template holding one ``{{ expression }}`` (the choices, the gold), or a literal; the question
    is the text template without a leading ``Question:`` and a trailing ``Answer:``."""

    def refuse(field: str, why: str) -> Exception:
        return fail(
            f"cannot build another prompt format: {why}; formats need it as a document field or a Jinja "
            "template (or an adapter in compiler/formats/adapters.py)",
            file=source,
            task=base,
            field=field,
        )

    text, choices, target = cfg.get("doc_to_text"), cfg.get("doc_to_choice"), cfg.get("doc_to_target")
    if not isinstance(text, str):
        raise refuse("doc_to_text", f"doc_to_text is {_kind(text)}")
    question = _TRAIL.sub("", _LEAD.sub("", text, count=1), count=1)
    if not _has_jinja(question):
        question = "{{" + question + "}}"  # a document field's name
    ch = _expression(choices)
    if ch is None:
        raise refuse("doc_to_choice", f"doc_to_choice is {_kind(choices)}")
    g = _expression(target)
    if g is None:
        raise refuse("doc_to_target", f"doc_to_target is {_kind(target)}")
    written = "mcf" if isinstance(choices, list) and all(isinstance(c, str) and len(c) == 1 for c in choices) else "cf"
    return Adapter(question, ch, g, written=written)


def _has_jinja(s: str) -> bool:
    return "{{" in s or "{%" in s


def _expression(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return repr(value)
    if isinstance(value, str):
        m = _ONE_EXPR.fullmatch(value.strip())
        if m:
            return m.group(1)
        if not _has_jinja(value) and value.isidentifier():
            return value  # a document field
    return None


def _kind(value: Any) -> str:
    if isinstance(value, FunctionRef):
        return f"a Python function ({value.qualname})"
    if value is None:
        return "not set"
    return f"a {type(value).__name__} that is not one expression"
