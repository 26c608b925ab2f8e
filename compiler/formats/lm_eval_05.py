"""lm-eval 0.5's prompt formats (issue #55): ``NAME@mcqa``, ``@cloze``, ``@generate``, ``@cot`` and a task
YAML's own ``formats:`` block, compiled to the requests lm-eval 0.5.0.dev1 builds, byte for byte.

lm-eval 0.5 describes a format by a handful of fields (its ``format_guide.md`` and the documented defaults of
its format classes, restated in ``REGISTRY``) and turns it into the task's ``doc_to_text`` /
``doc_to_choice`` / ``doc_to_target`` Jinja templates over the task's own ``doc_to_*`` values (which it
reads as field mappings). ``templates`` builds the same templates here, so the plan holds plain Jinja and
YAML and ``lmeval show`` / ``lmeval diff`` show every character; the renderer is the one every task uses.

The layout of a prompt::

    {instruction}{question_prefix}{question}
    {section_separator}{label}. {choice}{choice_delimiter}...      (when the format labels its choices)
    {section_separator}{answer_instruction}{answer_prompt}

``question`` is the task's ``doc_to_text`` as written: a field name becomes ``{{field}}``, a template is
used whole (so on a 0.4-style YAML whose ``doc_to_text`` is already ``"Question: {{question}}\\nAnswer:"``,
``@mcqa`` wraps the whole prompt again, as lm-eval 0.5 does). ``instruction`` and ``answer_prompt`` may use
``{{ _num_choices }}``, ``{{ _choice_labels }}``, ``{{ _choice_list_and }}``, ``{{ _choice_list_or }}``,
set by a preamble of ``{% set %}`` blocks when a labelled format references them.

Selection (lm-eval 0.5's rule): the YAML's ``formats:`` wins; a name or a ``{type: ..., overrides}``
mapping is applied whatever ``@FORMAT`` the task is selected with; a mapping of names is a table of
formats (the first the default, ``@NAME`` picks one, a string value names another format); without
``formats:``, ``@NAME`` names a format of the registry.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields, replace
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.formats.registry import format_adapter, register_format
from lmeval.compiler.formats.templates import LETTERS
from lmeval.compiler.functionref import FunctionRef
from lmeval.plans import LM_EVAL_05, PromptFormat, format_names

VOCABULARY = LM_EVAL_05  # the ``format.vocabulary`` of a task compiled in one of these formats
# the generation defaults lm-eval 0.5 gives a generate_until task without generation_kwargs
DEFAULT_GEN_TOKS = 256
_PREAMBLE_VARS = ("_num_choices", "_choice_labels", "_choice_list_and", "_choice_list_or")


@dataclass(frozen=True)
class Format05:
    """One lm-eval 0.5 format: its fields (``None``: the part is left out)."""

    name: str
    output_type: str
    instruction: str | None
    question_prefix: str | None
    choice_labels: str | tuple[str, ...] | None  # "letters", "numbers", a list of labels, or None
    choice_delimiter: str
    section_separator: str
    answer_instruction: str | None
    answer_prompt: str
    gen_prefix: str | None
    target_delimiter: str
    fewshot_delimiter: str
    scorer: str | dict[str, Any] | None

    @property
    def contract(self) -> PromptFormat:
        """What the scorer knows of it (plans/vocab/promptformats.py holds the shipped four, equal to these)."""
        generation = self.output_type == "generate_until"
        metric = "exact_match" if generation else "acc"
        return PromptFormat(self.name, LM_EVAL_05, generation, metric, labelled=self.choice_labels is not None)


_MCQA = Format05(
    name="mcqa", output_type="multiple_choice", instruction=None, question_prefix="Question: ",
    choice_labels="letters", choice_delimiter="\n", section_separator="\n", answer_instruction=None,
    answer_prompt="Answer:", gen_prefix=None, target_delimiter=" ", fewshot_delimiter="\n\n", scorer=None,
)  # fmt: skip
_GENERATE = replace(
    _MCQA,
    name="generate",
    output_type="generate_until",
    instruction="Given the following question and {{ _num_choices }} candidate answers ({{ _choice_list_and }}), "
    "choose the best answer.\n",
    answer_prompt='Your response should end with "The best answer is [answer_letter]" where the [answer_letter] '
    "is one of {{ _choice_list_or }}.",
    gen_prefix="The best answer is",
    target_delimiter="\n",
    scorer="first_token",
)
_COT = replace(
    _GENERATE,
    name="cot",
    instruction="Given the following problem, reason step by step to find the final answer.\n",
    question_prefix="Problem: ",
    choice_labels=None,
    answer_prompt='Your response should end with "The final answer is [answer]" where [answer] is the response '
    "to the problem.",
    gen_prefix=None,
)
# lm-eval 0.5.0.dev1's four, each registered by its name in the one lookup (registry: ``format_adapter``)
REGISTRY: dict[str, Format05] = {
    f.name: f for f in (_MCQA, replace(_MCQA, name="cloze", choice_labels=None), _GENERATE, _COT)
}
for _f in REGISTRY.values():  # the one lookup (registry): ``NAME@mcqa`` and the others, ``run.format``
    register_format(_f)
_FIELDS = tuple(f.name for f in fields(Format05) if f.name != "name")


class FormatError(ValueError):
    """A ``formats:`` value or ``@NAME`` lm-eval 0.5 refuses (the message is one line)."""


def lm_eval_05_format(name: str | None) -> Format05 | None:
    """The lm-eval 0.5 format named ``name`` in the lookup, or None (unknown, or OLMES')."""
    adapter = format_adapter(name)
    return adapter if isinstance(adapter, Format05) else None


def _by_type(name: Any, overrides: dict[str, Any], what: str) -> Format05:
    base = lm_eval_05_format(name) if isinstance(name, str) else None
    if base is None:
        names = ", ".join(format_names(LM_EVAL_05))
        raise FormatError(f"unknown format {what}{name!r}; lm-eval 0.5's formats are {names}")
    values: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in _FIELDS:
            raise FormatError(f"format {name!r} has no field {key!r}; its fields: {', '.join(_FIELDS)}")
        values[key] = _checked(name, key, value)
    return replace(base, **values)


_REQUIRED = ("choice_delimiter", "section_separator", "answer_prompt", "target_delimiter", "fewshot_delimiter")


def _checked(fmt: str, key: str, value: Any) -> Any:
    """An override's value, of the type its field takes (one-line error otherwise)."""
    ok: bool
    if key == "output_type":
        ok = value in ("multiple_choice", "generate_until")
    elif key == "choice_labels":
        ok = (
            value is None
            or value in ("letters", "numbers")
            or (isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value))
        )
        value = tuple(value) if isinstance(value, list) else value
    elif key == "scorer":
        ok = value is None or isinstance(value, str | dict)
    else:
        ok = isinstance(value, str) or (value is None and key not in _REQUIRED)
    if not ok:
        raise FormatError(f"format {fmt!r}: {key} cannot be {value!r:.60}")
    return value


def resolve_format(spec: Any, selection: str | None) -> Format05 | None:
    """The format ``spec`` (a YAML ``formats:`` value, else the ``@NAME`` selection) stands for, with
    ``selection`` choosing in a table of formats; None for no format."""
    if spec is None:
        return None
    if isinstance(spec, str):
        return _by_type(spec, {}, "")
    if not isinstance(spec, dict):
        raise FormatError(f"formats must be a format name or a mapping, got {type(spec).__name__}")
    if "type" in spec:
        return _by_type(spec["type"], {k: v for k, v in spec.items() if k != "type"}, "type ")
    if not spec:
        raise FormatError("formats is an empty mapping")
    if selection is not None and selection not in spec:
        raise FormatError(f"format {selection!r} not found in the task's formats (it has {', '.join(spec)})")
    chosen = selection if selection is not None else next(iter(spec))
    body = spec[chosen]
    if isinstance(body, str):
        return _by_type(body, {}, "")  # shorthand: ``name: other_format``
    if body is not None and not isinstance(body, dict):
        raise FormatError(f"formats.{chosen} must be a mapping of overrides, a format name or empty")
    return _by_type(chosen, dict(body or {}), "")


# ------------------------------------------------------------------------------------------ templates


def _label_at(labels: str | tuple[str, ...] | None, index: str) -> str:
    if labels == "letters":
        return f"'{LETTERS}'[{index}]"
    if labels == "numbers":
        return f"{index} + 1"
    if isinstance(labels, tuple):
        return f"{list(labels)!s}[{index}]"
    return "''"


def _labels_upto(labels: str | tuple[str, ...] | None, count: str) -> str:
    if labels == "letters":
        return f"'{LETTERS}'[:{count}]|list"
    if labels == "numbers":
        return f"range(1, {count} + 1)|list"
    if isinstance(labels, tuple):
        return f"{list(labels)!s}[:{count}]"
    return "''"


def _out(value: str) -> str:
    """A field mapping as output: a template as written (trimmed), a field name as ``{{name}}``."""
    return value.strip() if "{{" in value else "{{" + value + "}}"


def _expr(value: str) -> str:
    """A field mapping as an expression: a template's inner text (parenthesised unless one name)."""
    if "{{" not in value:
        return value
    inner = value.replace("{{", "").replace("}}", "").strip()
    return inner if inner.isidentifier() else f"({inner})"


def templates(f: Format05, text: str, choice: str | None, target: str) -> dict[str, str | None]:
    """``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target`` of format ``f`` over the task's mappings."""
    labelled = bool(f.choice_labels) and bool(choice)
    body = (f.instruction or "") + (f.question_prefix or "") + _out(text)
    if labelled:
        assert choice is not None
        body += f.section_separator + (
            "{% for choice in " + _expr(choice) + " %}{{ " + _label_at(f.choice_labels, "loop.index0")
            + " }}. {{ choice }}{% if not loop.last %}" + f.choice_delimiter + "{% endif %}{% endfor %}"
        )  # fmt: skip
    body += f.section_separator + (f.answer_instruction or "") + f.answer_prompt
    if labelled and any(v in body for v in _PREAMBLE_VARS):
        assert choice is not None
        join = "_choice_labels[:-1]|join(', ') ~ ' {} ' ~ _choice_labels[-1]|string"
        body = (
            "{% set _num_choices = " + _expr(choice) + "|length %}"
            "{% set _choice_labels = " + _labels_upto(f.choice_labels, "_num_choices") + " %}"
            "{% set _choice_list_and = " + join.format("and") + " %}"
            "{% set _choice_list_or = " + join.format("or") + " %}"
        ) + body
    return {"doc_to_text": body, "doc_to_target": _target(f, target, choice), "doc_to_choice": _choices(f, choice)}


def _target(f: Format05, target: str, choice: str | None) -> str:
    a, a_out = _expr(target), _out(target)
    c = _expr(choice) if choice else None
    if f.output_type == "multiple_choice":
        if c is None:
            raise FormatError(f"format {f.name!r} scores choices but the task has no doc_to_choice")
        return "{% if " + a + " is number %}" + a_out + "{% else %}{{ " + c + ".index(" + a + ") }}{% endif %}"
    if f.output_type == "generate_until":
        if f.choice_labels in ("letters", "numbers"):
            return (
                "{% if "
                + a
                + " is number %}{{ "
                + _label_at(f.choice_labels, a)
                + " }}{% else %}"
                + a_out
                + ("{% endif %}")
            )
        if c is not None:
            return "{% if " + a + " is number %}{{ " + c + "[" + a + "] }}{% else %}" + a_out + "{% endif %}"
    return a_out


def _choices(f: Format05, choice: str | None) -> str | None:
    if not choice:
        return None
    if not f.choice_labels:
        return "{{ " + _expr(choice) + " }}"
    return "{{ " + _labels_upto(f.choice_labels, _expr(choice) + "|length") + " }}"


# ------------------------------------------------------------------------------------------ task config


def _mapping(value: Any, key: str, default: str | None) -> str | None:
    """A task's ``doc_to_*`` as the field mapping a format reads (lm-eval 0.5: ints are literals, lists
    their Python text); a function cannot be read as one."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise FormatError(f"{key} is a boolean; a format reads it as a field name or a Jinja template")
    if isinstance(value, int):
        return "{{" + str(value) + "}}"
    if isinstance(value, list):
        return str(value)
    if isinstance(value, str):
        return value
    what = f"a Python function ({value.qualname})" if isinstance(value, FunctionRef) else type(value).__name__
    raise FormatError(f"{key} is {what}; a format reads it as a field name or a Jinja template")


def formatted05(cfg: dict[str, Any], selection: str | None, source: str | None) -> dict[str, Any]:
    """The config of a task in lm-eval 0.5's format: ``cfg['formats']`` (popped) or the ``@selection``,
    applied as lm-eval 0.5.0.dev1's TaskConfig applies it. ``cfg`` without either is returned unchanged."""
    name = str(cfg.get("task"))
    spec = cfg.get("formats", selection)
    out = {k: v for k, v in cfg.items() if k != "formats"}
    try:
        f = resolve_format(spec, selection if "formats" in cfg else None)
        if f is None:
            return out
        if f.output_type == "multiple_choice" and f.choice_labels == "numbers":
            raise FormatError("choice_labels 'numbers' on a multiple_choice format: lm-eval 0.5.0.dev1 builds no "
                              "requests for it (its labels are numbers, not strings)")  # fmt: skip
        made = templates(
            f,
            _mapping(cfg.get("doc_to_text"), "doc_to_text", "question") or "question",
            _mapping(cfg.get("doc_to_choice"), "doc_to_choice", None),
            _mapping(cfg.get("doc_to_target"), "doc_to_target", "answer") or "answer",
        )
    except FormatError as e:
        raise fail(str(e), file=source, task=name, field="formats" if "formats" in cfg else "format") from None
    out.update(made)
    if f.output_type == "generate_until":
        # lm-eval 0.5 scores a generation against the target the template gives ("A", or the choice's text);
        # a doc_to_choice left beside it would make 0.4.13's scoring index the choices with that target
        out.pop("doc_to_choice", None)
    out["output_type"] = f.output_type
    out["target_delimiter"] = f.target_delimiter
    out["fewshot_delimiter"] = f.fewshot_delimiter
    if f.gen_prefix is not None:
        out["gen_prefix"] = f.gen_prefix
    if f.output_type == "generate_until" and not out.get("generation_kwargs"):
        # lm-eval 0.5's defaults for a generation without generation_kwargs: greedy, until the delimiter
        out["generation_kwargs"] = {
            "until": [f.fewshot_delimiter],
            "do_sample": False,
            "temperature": 0.0,
            "max_gen_toks": DEFAULT_GEN_TOKS,
        }
    if f.scorer is not None:  # the format's scorer wins over the YAML's (lm-eval 0.5 sets it unconditionally)
        out["scorer"] = copy.deepcopy(f.scorer)
    out["format"] = {"name": f.name, "vocabulary": VOCABULARY, "task": name.partition("@")[0]}
    return out
