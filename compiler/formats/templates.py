"""The prompt templates of the formats, as OLMES (Gu et al., 2024) and its reference code (olmo-eval's
``make_mcq_prompt`` / ``make_cloze_prompt``) define them, written as the Jinja templates a task config holds.

MCF (multiple-choice letters): ``{question_prefix}{question}\\n{choices_text}\\nAnswer:`` where
``choices_text`` is ``"\\n".join(f" {label}. {text}")`` over the choices; each choice is scored as its label
(continuation ``" A"``, ``" B"``, ...). CF (cloze): ``{question_prefix}{question}\\nAnswer:``, each choice
scored as its text (``" " + text``). The label style is a parameter of MCF (``" A."`` is OLMES'; the
sensitivity variants ``" (A)"`` and ``" 1."`` change only the label), so a template variant is a config
change a plan and ``lmeval diff`` show.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmeval.compiler.errors import fail
from lmeval.plans import DEFAULT_LABEL_STYLE, PMI_CONTEXT

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ANSWER_PREFIX = PMI_CONTEXT  # "Answer:", also the unconditional context of acc_pmi


@dataclass(frozen=True)
class LabelStyle:
    """How a choice is labelled in an MCF prompt: ``before`` + label + ``after`` then a space and the text.
    ``numbers``: labels 1, 2, 3 instead of A, B, C."""

    name: str
    before: str
    after: str
    numbers: bool = False

    def label_expr(self) -> str:
        """A Jinja expression (inside a ``{% for %}`` loop) giving the current choice's label."""
        return "loop.index" if self.numbers else f"'{LETTERS}'[loop.index0]"

    def labels_expr(self, choices: str) -> str:
        """A Jinja expression rendering the Python list of the labels of ``choices``."""
        if self.numbers:
            return f"range(1, ({choices})|length + 1)|map('string')|list"
        return f"'{LETTERS}'[:({choices})|length]|list"


LABEL_STYLES: dict[str, LabelStyle] = {
    "letters": LabelStyle("letters", " ", "."),  # OLMES: " A. text"
    "parens": LabelStyle("parens", " (", ")"),  # " (A) text"
    "numbers": LabelStyle("numbers", " ", ".", numbers=True),  # " 1. text"
}
DEFAULT_LABELS = DEFAULT_LABEL_STYLE  # plans/vocab/promptformats.py: the style a variant name leaves out


def label_style(name: str, where: str) -> LabelStyle:
    style = LABEL_STYLES.get(name)
    if style is None:
        raise fail(f"unknown label style {name!r}; expected one of {', '.join(LABEL_STYLES)}", field=where)
    return style


def mcf_text(question_prefix: str, question: str, choices: str, style: LabelStyle, answer: str = ANSWER_PREFIX) -> str:
    """The MCF ``doc_to_text``: ``question`` is a Jinja fragment, ``choices`` a Jinja expression (a list)."""
    line = f"{style.before}{{{{ {style.label_expr()} }}}}{style.after} {{{{ c }}}}\n"
    return f"{question_prefix}{question}\n{{% for c in ({choices}) %}}{line}{{% endfor %}}{answer}"


def mcf_choices(choices: str, style: LabelStyle) -> str:
    """The MCF ``doc_to_choice``: the labels, as many as the document has choices."""
    return f"{{{{ {style.labels_expr(choices)} }}}}"


def cf_text(question_prefix: str, question: str, answer: str = ANSWER_PREFIX) -> str:
    """The CF ``doc_to_text`` (OLMES' ``make_cloze_prompt``)."""
    return f"{question_prefix}{question}\n{answer}"


def cf_choices(choices: str) -> str:
    return f"{{{{ {choices} }}}}"


def gold(expr: str) -> str:
    return f"{{{{ {expr} }}}}"


# The answer a generation gives to an MCF prompt: the first label after optional whitespace (newlines too)
# and an opening parenthesis, at the start of the response ("Answer:" is the prompt's last word), e.g. " B",
# " (B)", " B. text", "\nB". A response that starts otherwise is unparsed ("[invalid]": scored 0).
GEN_LETTER_REGEX = r"^\s*\(?([A-Z])\b"
GEN_NUMBER_REGEX = r"^\s*\(?([0-9]+)\b"
GEN_FILTER = "letter"
GEN_UNTIL = ["\n\n", "Question:"]  # the end of an answer: a blank line or the next question
GEN_MAX_TOKENS = 16
