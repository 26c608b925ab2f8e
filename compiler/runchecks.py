"""Checks of the run options that need more than a type: the budgets (plans/vocab/budgets.py) and the statistics
options (``run.subsample``, ``run.sample_scores``); ``compiler.config.run_config`` calls them."""

from __future__ import annotations

from typing import Any

from lmeval.compiler.errors import CompileError, fail
from lmeval.plans import (
    MAX_GEN_TOKS,
    Reasoning,
    SampleScoresError,
    Subsample,
    SubsampleError,
    parse_sample_scores,
    parse_subsample,
)


def bad(key: str, want: str, got: Any) -> CompileError:
    return fail(f"must be {want}, got {got!r}", field=f"run.{key}")


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def statistics_options(raw: dict[str, Any], limit: int | float | None) -> tuple[Subsample | None, list[str] | None]:
    """``run.subsample`` (plans/vocab/subsample.py; not with ``run.limit``) and ``run.sample_scores``."""
    try:
        sub = parse_subsample(raw.get("subsample"))
        scores = parse_sample_scores(raw.get("sample_scores"), "run.sample_scores")
    except (SubsampleError, SampleScoresError) as e:
        raise CompileError(str(e)) from None
    if sub is not None and limit is not None:
        raise fail("run.limit takes the first documents; run.subsample a random subset: set one", field="run.subsample")
    return sub, scores


def budget_options(raw: dict[str, Any], reasoning: Reasoning | None) -> tuple[int | None, int | None]:
    """``run.thinking_budget`` and ``run.answer_budget`` (plans/vocab/budgets.py); 0 or null is none."""
    got: list[int | None] = []
    for key in ("thinking_budget", "answer_budget"):
        v = raw.get(key)
        if v is not None and (not is_int(v) or not 0 <= v <= MAX_GEN_TOKS):
            raise bad(key, f"a number of tokens (an integer in 0..{MAX_GEN_TOKS})", v)
        got.append(v or None)
    thinking, answer = got
    if answer and not thinking:
        raise fail("needs run.thinking_budget (the answer budget counts from the end marker)",
                   field="run.answer_budget")  # fmt: skip
    if thinking and reasoning is None:
        raise fail("needs run.reasoning (its first end marker is the one forced)", field="run.thinking_budget")
    return thinking, answer


def format_option(raw: dict[str, Any]) -> str | None:
    """``run.format`` (compiler/formats): one of the prompt formats, OLMES' or lm-eval 0.5's, or None."""
    from lmeval.plans import LM_EVAL_FORMATS, PROMPT_FORMATS

    fmt = raw.get("format")
    if fmt is not None and fmt not in PROMPT_FORMATS + LM_EVAL_FORMATS:
        raise bad("format", f"one of {', '.join(PROMPT_FORMATS)} (OLMES) or {', '.join(LM_EVAL_FORMATS)} (lm-eval 0.5)",
                  fmt)  # fmt: skip
    return fmt if isinstance(fmt, str) else None


def strict_option(raw: dict[str, Any]) -> bool:
    """``run.strict_fields`` (compiler/build/nullfields.py): true or false."""
    strict = raw.get("strict_fields", False)
    if not isinstance(strict, bool):
        raise bad("strict_fields", "true or false", strict)
    return strict
