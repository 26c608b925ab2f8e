"""The records a task build produces and takes: ``BuildOptions`` (what building needs), ``Request``, ``BuiltDoc``,
``BuiltTask`` and ``Prepared`` (``compiler/build/builder.py``'s two halves), so the modules downstream of the builder
(header, task records, pipeline) depend on data, not on the builder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmeval.compiler.build.nullfields import NullField
from lmeval.compiler.build.render import Renderer
from lmeval.compiler.tasks import TaskConfig
from lmeval.plans import Drawn, Subsample

# (messages, add_generation_prompt[, tools]) -> text; tools: the JSON schemas of plans/plan/toolcalls.py, or None
ChatFn = Callable[..., str]


@dataclass
class BuildOptions:
    """What building one task's documents and requests needs (``RunConfig.options()``)."""

    num_fewshot: int | None = None
    limit: int | float | None = None
    fewshot_random_seed: int | None = 1234
    python_seed: int | None = None  # run.seed's slots for the global generators (compiler/build/seeds.py)
    numpy_seed: int | None = None
    apply_chat_template: bool = False
    fewshot_as_multiturn: bool = False
    system_instruction: str | None = None
    gen_kwargs: dict[str, Any] | None = None
    data_dir: str | None = None
    thinking_budget: int | None = None  # run.thinking_budget: tokens of reasoning at most (plans/vocab/budgets.py)
    answer_budget: int | None = None  # run.answer_budget: tokens after the end marker (None: max_gen_toks)
    budget_end: str | None = None  # the forced end marker (run.reasoning.end[0]) and its token ids
    budget_end_ids: list[int] | None = None
    subsample: Subsample | None = None  # run.subsample (plans/vocab/subsample.py)
    sample_scores: list[str] | None = None  # run.sample_scores: for generate_until tasks without their own


def budgeted(gk: dict[str, Any], opts: BuildOptions) -> dict[str, Any]:
    """A generation's kwargs with the run's thinking budget (``plans/vocab/budgets.py``): ``reasoning_budget`` and
    ``max_gen_toks`` = thinking + end marker + answer, the answer budget being ``run.answer_budget`` or the
    task's own ``max_gen_toks`` (lm-eval's 256 when it has none); unchanged without a budget."""
    if not opts.thinking_budget:
        return gk
    from lmeval.compiler.tasks import DEFAULT_MAX_GEN_TOKS
    from lmeval.plans import BUDGET_KEY as KEY
    from lmeval.plans import MAX_GEN_TOKS, ThinkingBudget

    assert opts.budget_end is not None and opts.budget_end_ids
    answer = opts.answer_budget or int(gk.get("max_gen_toks") or DEFAULT_MAX_GEN_TOKS)
    b = ThinkingBudget(opts.thinking_budget, answer, opts.budget_end, tuple(opts.budget_end_ids))
    if b.total > MAX_GEN_TOKS:  # a plan every reader would refuse (plans/plan/validate.py): refused here instead
        from lmeval.compiler.errors import fail

        raise fail(
            f"thinking {b.thinking} + end marker {len(b.end_ids)} + answer {b.answer} tokens is over the "
            f"{MAX_GEN_TOKS} a generation may ask",
            field="run.thinking_budget",
        )
    return {**gk, "max_gen_toks": b.total, KEY: b.to_dict()}


@dataclass
class Request:
    request_type: str
    context: str
    continuation: str | None
    generation_kwargs: dict[str, Any] | None
    idx: int
    messages: list[dict[str, str]] | None = None  # a chat-templated generation's messages (plans/plan/chatmessages.py)
    media: list[dict[str, Any]] | None = None  # the images it shows, in order (plans/plan/media.py:MediaRef maps)
    tools: list[dict[str, Any]] | None = None  # a tool-call task's tools, as templated (plans/plan/toolcalls.py)


@dataclass
class BuiltDoc:
    doc_id: int
    doc: dict[str, Any]
    target: Any
    choices: list[Any] | None
    fewshot_ids: list[int]
    requests: list[Request]


@dataclass
class BuiltTask:
    config: TaskConfig
    num_fewshot: int
    docs: list[BuiltDoc]
    eval_docs: list[dict[str, Any]]  # the whole evaluation split, processed (for the data fingerprint)
    multiple_input: int
    multiple_target: int
    notes: list[str] = field(default_factory=list)
    null_fields: list[NullField] = field(default_factory=list)  # never in the plan (compiler/build/nullfields.py)
    subsample: Drawn | None = None  # run.subsample: what was chosen (plans/vocab/subsample.py)
    media: dict[str, bytes] = field(default_factory=dict)  # its images' bytes by sha256 (the plan's companion)


@dataclass
class Prepared:
    """A task's documents processed and probed (``TaskBuilder.prepare``), ready to render."""

    docs: list[dict[str, Any]]  # the whole evaluation split, processed
    pool: list[dict[str, Any]]  # the few-shot pool (empty at 0 shots)
    renderer: Renderer
    n_shot: int
    multiple_input: int
    multiple_target: int
