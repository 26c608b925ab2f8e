"""Prompt formats as a compile axis (issue #38): one multiple-choice task as cloze (``cf``), lettered
multiple choice (``mcf``) or generated letter (``gen``), as OLMES defines them (``templates``), built from
where each task keeps its question, choices and answer (``adapters``) into a task config of its own
(``apply``). Selected as ``NAME@FMT`` (``+task=arc_easy@mcf``, ``run.tasks=[mmlu@cf]``) or ``run.format=FMT``
for every multiple-choice task, ``NAME@sweep`` for a sensitivity sweep (``sweep``). Beside them, lm-eval 0.5's
formats (``lm_eval_05``: ``NAME@mcqa|cloze|generate|cot``, a task YAML's ``formats:``) and its ``scorer:`` key
(``scorer_05``). Every format is an adapter object behind one lookup (``registry``: ``format_adapter(NAME)``,
``register_format``; OLMES' in ``olmes``), its contract in plans/vocab/promptformats.py. Design note:
docs/how-to/formats.md."""

from lmeval.common import face_names
from lmeval.compiler.formats.adapters import ADAPTERS as ADAPTERS
from lmeval.compiler.formats.adapters import Adapter as Adapter
from lmeval.compiler.formats.adapters import adapter_for as adapter_for
from lmeval.compiler.formats.apply import check_format as check_format
from lmeval.compiler.formats.apply import format_metric as format_metric
from lmeval.compiler.formats.apply import formatted as formatted
from lmeval.compiler.formats.apply import group_aggregates as group_aggregates
from lmeval.compiler.formats.apply import primary_metric as primary_metric
from lmeval.compiler.formats.apply import refuse_format_record as refuse_format_record
from lmeval.compiler.formats.lm_eval_05 import Format05 as Format05
from lmeval.compiler.formats.lm_eval_05 import formatted05 as formatted05
from lmeval.compiler.formats.lm_eval_05 import lm_eval_05_format as lm_eval_05_format
from lmeval.compiler.formats.olmes import CF_METRICS as CF_METRICS
from lmeval.compiler.formats.olmes import OlmesFormat as OlmesFormat
from lmeval.compiler.formats.olmes import default_variant as default_variant
from lmeval.compiler.formats.olmes import olmes_format as olmes_format
from lmeval.compiler.formats.registry import FormatAdapter as FormatAdapter
from lmeval.compiler.formats.registry import format_adapter as format_adapter
from lmeval.compiler.formats.registry import register_format as register_format
from lmeval.compiler.formats.registry import unregister_format as unregister_format
from lmeval.compiler.formats.scorer_05 import with_scorer as with_scorer
from lmeval.compiler.formats.sweep import Sweep as Sweep
from lmeval.compiler.formats.sweep import parse_sweep as parse_sweep
from lmeval.compiler.formats.templates import ANSWER_PREFIX as ANSWER_PREFIX
from lmeval.compiler.formats.templates import DEFAULT_LABELS as DEFAULT_LABELS
from lmeval.compiler.formats.templates import GEN_LETTER_REGEX as GEN_LETTER_REGEX
from lmeval.compiler.formats.templates import LABEL_STYLES as LABEL_STYLES
from lmeval.compiler.formats.templates import LabelStyle as LabelStyle
from lmeval.plans import LM_EVAL_FORMATS as LM_EVAL_FORMATS
from lmeval.plans import PROMPT_FORMATS as PROMPT_FORMATS
from lmeval.plans import SEPARATOR as SEPARATOR
from lmeval.plans import fallback_format as fallback_format
from lmeval.plans import format_name as format_name
from lmeval.plans import split_name as split_name

__all__ = face_names(__name__)
