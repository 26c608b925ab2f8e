"""Turn a validated spec file into an lm-eval-style task config plus its documents, for the compiler core."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.compiler.errors import CompileError
from lmeval.compiler.jsonl_spec.rules import (
    DEFAULT_GENERATION_KWARGS,
    EXAMPLE_JOIN,
    EXAMPLE_SEPARATOR,
    GENERATION_KWARGS,
)
from lmeval.compiler.jsonl_spec.validate import SpecReport, validate_file

SPEC_VERSION = 1
TASK_NAME = "jsonl"


class SpecError(CompileError):
    """A spec file with invalid lines (and allow_bad_tasks off), or with no valid line at all."""


@dataclass
class SpecTask:
    """For the compiler core: a task config its normal machinery renders, the docs, the skipped lines."""

    task_config: dict[str, Any]
    docs: list[dict[str, Any]]
    bad_lines: list[str] = field(default_factory=list)  # one formatted error per entry, file order


def render_prompt(rec: dict[str, Any]) -> str:
    """Few-shot examples as ``prompt + " " + completion``, then the task prompt, joined by a blank line."""
    parts = [ex["prompt"] + EXAMPLE_JOIN + ex["completion"] for ex in rec.get("few_shot_examples") or ()]
    parts.append(rec["prompt"])
    return EXAMPLE_SEPARATOR.join(parts)


def spec_doc(line: int, rec: dict[str, Any]) -> dict[str, Any]:
    """One valid record as a plan document: every spec field (optional ones defaulted), plus
    ``rendered_prompt``, ``line`` (1-based source line) and its category's ``generation_kwargs``."""
    doc = dict(rec)
    doc.setdefault("few_shot_examples", [])
    doc.setdefault("metadata", {})
    doc["rendered_prompt"] = render_prompt(rec)
    doc["line"] = line
    gen = GENERATION_KWARGS[rec["category"]]
    doc["generation_kwargs"] = {**gen, "until": list(gen["until"])}  # a copy: docs must not share lists
    return doc


def task_config(path: str, name: str, sha256: str) -> dict[str, Any]:
    return {
        "task": name,
        # the docs are in the plan; where the file lives is not (plans/plan/identity.py)
        "dataset_path": Path(path).name,
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "rendered_prompt",  # a field name: no template to render
        "doc_to_target": "{{targets[0]}}",
        "target_delimiter": "",
        "fewshot_delimiter": EXAMPLE_SEPARATOR,
        "num_fewshot": 0,
        "generation_kwargs": {**DEFAULT_GENERATION_KWARGS, "until": list(DEFAULT_GENERATION_KWARGS["until"])},
        "metric_list": [{"metric": "jsonl_spec"}],
        "metadata": {"version": SPEC_VERSION, "spec_file": Path(path).name, "spec_sha256": sha256},
    }


def _refusal(report: SpecReport, path: str, name: str) -> str:
    first = report.issues[0]
    n = len(report.bad_lines)
    return (
        f"{first.format(path)}; {n} of {report.n_lines} line{'s' if report.n_lines != 1 else ''} invalid "
        f"(`lmeval validate {path}` lists them; task.{name}.allow_bad_tasks=true skips them)"
    )


def load_spec_task(path: str, allow_bad_tasks: bool, *, name: str = TASK_NAME) -> SpecTask:
    """Validate and load a spec file. Any invalid line raises ``SpecError`` (file, line, rule, count) unless
    ``allow_bad_tasks``; then invalid lines are skipped and listed in ``bad_lines``. No valid line at all
    is always an error."""
    path = str(path)
    report = validate_file(path)
    if report.issues and not allow_bad_tasks:
        raise SpecError(_refusal(report, path, name))
    if not report.records:
        raise SpecError(f"{path}: no valid task in the spec file ({report.issues[0].format(path)})")
    return SpecTask(
        task_config=task_config(path, name, report.sha256),
        docs=[spec_doc(line, rec) for line, rec in report.records],
        bad_lines=[issue.format(path) for issue in report.issues],
    )
