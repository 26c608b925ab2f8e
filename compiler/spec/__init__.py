"""Deprecated: the frozen JSONL task spec moved to ``lmeval.compiler.jsonl_spec`` (issue #37); this old path
re-exports it with a DeprecationWarning, for one release."""

import warnings

from lmeval.compiler.jsonl_spec import (
    CATEGORIES,
    GENERATION_KWARGS,
    LEGAL,
    METRICS,
    POST_PROCESS,
    RULES,
    SPEC_VERSION,
    SpecError,
    SpecIssue,
    SpecReadError,
    SpecReport,
    SpecTask,
    check_record,
    load_spec_task,
    render_prompt,
    spec_doc,
    validate_file,
)

__all__ = [
    "CATEGORIES",
    "GENERATION_KWARGS",
    "LEGAL",
    "METRICS",
    "POST_PROCESS",
    "RULES",
    "SPEC_VERSION",
    "SpecError",
    "SpecIssue",
    "SpecReadError",
    "SpecReport",
    "SpecTask",
    "check_record",
    "load_spec_task",
    "render_prompt",
    "spec_doc",
    "validate_file",
]

warnings.warn(
    "lmeval.compiler.spec is deprecated and will be removed in the next release: import lmeval.compiler.jsonl_spec",
    DeprecationWarning,
    stacklevel=2,
)
