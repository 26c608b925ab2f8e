"""The frozen JSONL task spec (issue #6): one task per line of ``tasks.jsonl``, validated strictly.

Schema (spec version 1). Required: ``task_id`` (non-empty string without whitespace, unique in the file),
``category`` (arithmetic | mcq | code_exec | classification | summary), ``prompt`` (non-empty string, no
trailing whitespace, no blank line: few-shot rendering is the runner's), ``targets`` (non-empty array of
strings), ``metric_name`` (exact_match | f1 | bleu_4 | rouge_l | accuracy | code_exec), ``post_process``
(none | strip_whitespace | lower | extract_letter | extract_code_block | extract_first_line; one rule).
Optional: ``few_shot_examples`` (array of at most 8 ``{"prompt", "completion"}`` objects, both strings; a
non-empty prompt without trailing whitespace; neither with a blank line), ``metadata`` (object). Nothing else.

Legal metric / post_process pairs per category (anything else is ``metric_not_allowed`` or
``post_process_not_allowed``)::

    category        metric        post_process
    arithmetic      exact_match   none, strip_whitespace, extract_first_line
    mcq             exact_match   extract_letter, strip_whitespace
    code_exec       code_exec     none, extract_code_block
    classification  accuracy      none, strip_whitespace, lower, extract_first_line
    classification  exact_match   none, strip_whitespace, lower, extract_first_line
    summary         rouge_l       none, strip_whitespace, lower, extract_first_line
    summary         bleu_4        none, strip_whitespace, lower, extract_first_line
    summary         f1            none, strip_whitespace, lower, extract_first_line

So code_exec tasks use metric code_exec and only they do; mcq tasks use exact_match and must have exactly one
target, a single letter A-E (``mcq_target``), the letters ``extract_letter`` can return.

Generation per category (each doc carries its own ``generation_kwargs``; greedy, ``do_sample: false``)::

    arithmetic      until ["\\n\\n"]          max_gen_toks 64    (the example separator ends an answer)
    mcq             until ["\\n\\n", "\\n"]    max_gen_toks 8     (a letter, maybe with its text)
    code_exec       until []                max_gen_toks 512   (code has blank lines: stop at EOS or length)
    classification  until ["\\n\\n", "\\n"]    max_gen_toks 16    (one label)
    summary         until ["\\n\\n"]          max_gen_toks 256   (one paragraph)

The task-level ``generation_kwargs`` (until ["\\n\\n"], max_gen_toks 512) is only the fallback for a consumer
that ignores the per-doc ones.

Rendering: each few-shot example is ``prompt + " " + completion``; examples and the task prompt are joined by
``"\\n\\n"`` into the doc's ``rendered_prompt``, which the task config's ``doc_to_text`` uses as is (0-shot in
lm-eval terms, empty target delimiter).

Validation (``validate_file``) checks every line on its own and reports each broken rule once, as
``FILE:LINE: task_id: rule (field): detail``; ``rules.RULES`` lists every rule id. Whole-line problems
(invalid UTF-8, a line over 1 MiB, a blank line, malformed JSON or NaN/Infinity, a repeated key, a
non-object) and an empty file are reported with their line number like any other. A duplicate task_id is
reported on the later line.
"""

from lmeval.common import face_names
from lmeval.compiler.jsonl_spec.load import SPEC_VERSION as SPEC_VERSION
from lmeval.compiler.jsonl_spec.load import SpecError as SpecError
from lmeval.compiler.jsonl_spec.load import SpecTask as SpecTask
from lmeval.compiler.jsonl_spec.load import load_spec_task as load_spec_task
from lmeval.compiler.jsonl_spec.load import render_prompt as render_prompt
from lmeval.compiler.jsonl_spec.load import spec_doc as spec_doc
from lmeval.compiler.jsonl_spec.rules import GENERATION_KWARGS as GENERATION_KWARGS
from lmeval.compiler.jsonl_spec.rules import LEGAL as LEGAL
from lmeval.compiler.jsonl_spec.rules import RULES as RULES
from lmeval.compiler.jsonl_spec.validate import SpecIssue as SpecIssue
from lmeval.compiler.jsonl_spec.validate import SpecReadError as SpecReadError
from lmeval.compiler.jsonl_spec.validate import SpecReport as SpecReport
from lmeval.compiler.jsonl_spec.validate import check_record as check_record
from lmeval.compiler.jsonl_spec.validate import validate_file as validate_file
from lmeval.plans import CATEGORIES as CATEGORIES
from lmeval.plans import POST_PROCESS as POST_PROCESS
from lmeval.plans import SPEC_METRICS as METRICS  # noqa: F401 (a renamed export, read by lazyface)

__all__ = face_names(__name__)
