"""A document's requests by output type, as lm-eval 0.4.13's ``ConfigurableTask.construct_requests``:
loglikelihood, loglikelihood_rolling, multiple_choice (a pair per choice, the unconditional contexts after them)
and generate_until (the task's generation kwargs, the document's own for a JSONL spec, the run's on top).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmeval.compiler.build.records import BuildOptions, Request, budgeted
from lmeval.compiler.tasks import TaskConfig
from lmeval.plans import UNCONDITIONAL_CONTEXTS, unconditional_metrics


def construct_requests(
    s: TaskConfig,
    run: BuildOptions,
    ctx: str | list[str],
    doc: dict[str, Any],
    target: Any,
    choices: list[Any] | None,
    where: Callable,
) -> list[Request]:
    """One document's requests by output type, as lm-eval's ``construct_requests``: ``ctx`` the rendered
    context (or one per choice of a multiple-input task), ``where`` names a field in an error."""
    ot = s.output_type
    if ot == "loglikelihood":
        assert isinstance(ctx, str)
        if not isinstance(target, str):
            raise where("doc_to_target", f"loglikelihood needs a string target, got {type(target).__name__}")
        return [Request("loglikelihood", ctx, target, None, 0)]
    if ot == "loglikelihood_rolling":
        if not isinstance(target, str):
            raise where("doc_to_target", f"loglikelihood_rolling needs a string, got {type(target).__name__}")
        return [Request("loglikelihood_rolling", target, None, None, 0)]
    if ot == "multiple_choice":
        assert choices is not None
        delim = s.target_delimiter
        if run.apply_chat_template:
            gp = s.gen_prefix
            delim = s.target_delimiter if gp and not (gp and gp[-1].isspace()) else ""
        if isinstance(ctx, list):
            pairs = [(c, f"{delim}{target}") for c in ctx]
        else:
            pairs = [(ctx, f"{delim}{ch}") for ch in choices]
        for metric in _unconditional(s):
            pairs += [(UNCONDITIONAL_CONTEXTS[metric], f"{delim}{ch}") for ch in choices]
        return [Request("loglikelihood", c, cont, None, i) for i, (c, cont) in enumerate(pairs)]
    assert isinstance(ctx, str)
    gk = dict(s.generation_kwargs or {})
    if s.per_doc_generation_kwargs and isinstance(doc.get("generation_kwargs"), dict):
        gk = dict(doc["generation_kwargs"])
    if run.gen_kwargs:
        gk.update(run.gen_kwargs)
    return [Request("generate_until", ctx, None, budgeted(gk, run), 0)]


def _unconditional(s: TaskConfig) -> list[str]:
    """The task's metrics that score choices against an unconditional context (plans/vocab/scoring.py)."""
    return unconditional_metrics(str(m.get("metric")) for m in s.metric_list or [] if isinstance(m, dict))
