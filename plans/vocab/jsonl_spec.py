"""The JSONL task spec's vocabulary, shared by the compiler (which validates spec lines into plan documents)
and the scorer (which scores those documents): field names, categories, metrics and post-process rules.

The schema and the per-category tables are described in ``compiler/jsonl_spec/__init__.py``; what each metric and
rule computes is the scorer's (``scorer/metrics/spec_scoring.py``).
"""

from __future__ import annotations

REQUIRED_FIELDS = ("task_id", "category", "prompt", "targets", "metric_name", "post_process")
OPTIONAL_FIELDS = ("few_shot_examples", "metadata")
ALL_FIELDS = frozenset(REQUIRED_FIELDS + OPTIONAL_FIELDS)
EXAMPLE_FIELDS = ("prompt", "completion")

CATEGORIES = ("arithmetic", "mcq", "code_exec", "classification", "summary")
SPEC_METRICS = ("exact_match", "f1", "bleu_4", "rouge_l", "accuracy", "code_exec")
POST_PROCESS = (
    "none",
    "strip_whitespace",
    "lower",
    "extract_letter",
    "extract_code_block",
    "extract_first_line",
)
MCQ_LETTERS = ("A", "B", "C", "D", "E")  # the letters extract_letter can return, so the only legal mcq targets
