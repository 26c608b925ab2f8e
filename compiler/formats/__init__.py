"""Prompt formats as a compile axis (issue #38): one multiple-choice task as cloze (``cf``), lettered
multiple choice (``mcf``) or generated letter (``gen``), as OLMES defines them (``templates``), built from
where each task keeps its question, choices and answer (``adapters``) into a task config of its own
(``apply``). Selected as ``NAME@FMT`` (``+task=arc_easy@mcf``, ``run.tasks=[mmlu@cf]``) or ``run.format=FMT``
for every multiple-choice task, ``NAME@sweep`` for a sensitivity sweep (``sweep``). Beside them, lm-eval 0.5's
formats (``lm_eval_05``: ``NAME@mcqa|cloze|generate|cot``, a task YAML's ``formats:``) and its ``scorer:`` key
(``scorer_05``). Every format is an adapter object behind one lookup (``registry``: ``format_adapter(NAME)``,
``register_format``; OLMES' in ``olmes``), its contract in plans/promptformats.py. Design note:
docs/how-to/formats.md."""

from lmeval.compiler.formats.adapters import ADAPTERS, Adapter, adapter_for
from lmeval.compiler.formats.apply import check_format, format_metric, formatted, group_aggregates, primary_metric
from lmeval.compiler.formats.lm_eval_05 import Format05, formatted05, lm_eval_05_format
from lmeval.compiler.formats.olmes import CF_METRICS, OlmesFormat, default_variant, olmes_format
from lmeval.compiler.formats.registry import FormatAdapter, format_adapter, register_format, unregister_format
from lmeval.compiler.formats.scorer_05 import with_scorer
from lmeval.compiler.formats.sweep import Sweep, parse_sweep
from lmeval.compiler.formats.templates import (
    ANSWER_PREFIX,
    DEFAULT_LABELS,
    GEN_LETTER_REGEX,
    LABEL_STYLES,
    LabelStyle,
)
from lmeval.plans import LM_EVAL_FORMATS, PROMPT_FORMATS, SEPARATOR, fallback_format, format_name, split_name

__all__ = [
    "ADAPTERS",
    "ANSWER_PREFIX",
    "CF_METRICS",
    "DEFAULT_LABELS",
    "PROMPT_FORMATS",
    "GEN_LETTER_REGEX",
    "LABEL_STYLES",
    "SEPARATOR",
    "Adapter",
    "Format05",
    "LM_EVAL_FORMATS",
    "formatted05",
    "with_scorer",
    "Sweep",
    "LabelStyle",
    "adapter_for",
    "check_format",
    "format_name",
    "format_metric",
    "formatted",
    "parse_sweep",
    "primary_metric",
    "split_name",
    "FormatAdapter",
    "fallback_format",
    "OlmesFormat",
    "format_adapter",
    "group_aggregates",
    "lm_eval_05_format",
    "olmes_format",
    "default_variant",
    "register_format",
    "unregister_format",
]
