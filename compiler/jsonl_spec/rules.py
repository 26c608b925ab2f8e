"""The frozen JSONL task spec's per-category tables and rule list (the data behind the validator); the
vocabulary itself (fields, categories, metrics, post-process rules) is the contract's, ``plans/vocab/jsonl_spec.py``.

See ``compiler/jsonl_spec/__init__.py`` for the schema and the rules in words.
"""

from __future__ import annotations

from typing import Any

from lmeval.plans import CATEGORIES, POST_PROCESS, SPEC_METRICS

MAX_FEW_SHOT = 8
EXAMPLE_SEPARATOR = "\n\n"  # between few-shot examples and before the task prompt
EXAMPLE_JOIN = " "  # between an example's prompt and its completion
MAX_LINE_BYTES = 1 << 20  # 1 MiB: a longer line is reported (and skipped unread)

_TEXT = frozenset({"none", "strip_whitespace", "lower", "extract_first_line"})

# category -> metric -> legal post_process rules
LEGAL: dict[str, dict[str, frozenset[str]]] = {
    "arithmetic": {"exact_match": frozenset({"none", "strip_whitespace", "extract_first_line"})},
    "mcq": {"exact_match": frozenset({"extract_letter", "strip_whitespace"})},
    "code_exec": {"code_exec": frozenset({"none", "extract_code_block"})},
    "classification": {"accuracy": _TEXT, "exact_match": _TEXT},
    "summary": {"rouge_l": _TEXT, "bleu_4": _TEXT, "f1": _TEXT},
}

# category -> generation kwargs of its Instances
GENERATION_KWARGS: dict[str, dict[str, Any]] = {
    "arithmetic": {"until": ["\n\n"], "max_gen_toks": 64, "do_sample": False, "temperature": 0.0},
    "mcq": {"until": ["\n\n", "\n"], "max_gen_toks": 8, "do_sample": False, "temperature": 0.0},
    "code_exec": {"until": [], "max_gen_toks": 512, "do_sample": False, "temperature": 0.0},
    "classification": {"until": ["\n\n", "\n"], "max_gen_toks": 16, "do_sample": False, "temperature": 0.0},
    "summary": {"until": ["\n\n"], "max_gen_toks": 256, "do_sample": False, "temperature": 0.0},
}
# the task-level default, for a consumer that does not read each doc's own generation_kwargs
DEFAULT_GENERATION_KWARGS: dict[str, Any] = {
    "until": ["\n\n"],
    "max_gen_toks": 512,
    "do_sample": False,
    "temperature": 0.0,
}

# every rule the validator reports, with what it means (the `rule` part of `file:LINE: task_id: rule (field)`)
RULES: dict[str, str] = {
    "empty_file": "the file has no lines",
    "invalid_utf8": "the line is not valid UTF-8",
    "line_too_long": f"the line is longer than {MAX_LINE_BYTES} bytes",
    "blank_line": "the line is empty or whitespace only",
    "invalid_json": "the line is not one JSON value (NaN and Infinity are not JSON)",
    "duplicate_key": "a JSON object repeats a key",
    "not_object": "the line is JSON but not an object",
    "nesting_too_deep": "a value is nested deeper than plans.limits.MAX_DEPTH",
    "integer_out_of_range": "an integer outside the 64-bit range (a plan cannot carry it)",
    "lone_surrogate": "a string holds a lone surrogate (\\ud800-\\udfff): not valid Unicode",
    "missing_field": "a required field is absent",
    "unknown_field": "a field that is not in the schema",
    "wrong_type": "a field has the wrong JSON type",
    "empty_task_id": "task_id is the empty string",
    "task_id_whitespace": "task_id contains whitespace",
    "duplicate_task_id": "task_id already used on an earlier line",
    "unknown_category": f"category is not one of {', '.join(CATEGORIES)}",
    "empty_prompt": "a prompt is empty",
    "prompt_trailing_whitespace": "the prompt ends with whitespace",
    "fewshot_block_in_prompt": "a prompt or completion has a blank line (the few-shot separator)",
    "empty_targets": "targets is an empty list",
    "unknown_metric": f"metric_name is not one of {', '.join(SPEC_METRICS)}",
    "unknown_post_process": f"post_process is not one of {', '.join(POST_PROCESS)}",
    "metric_not_allowed": "metric_name is not legal for the category",
    "post_process_not_allowed": "post_process is not legal for the category and metric",
    "mcq_target": "an mcq task needs exactly one target, a single letter A-E",
    "too_many_examples": f"few_shot_examples has more than {MAX_FEW_SHOT} entries",
}
