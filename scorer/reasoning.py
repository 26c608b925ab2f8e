"""``run.reasoning`` at score time (the rule itself: ``plans.reasoning``): a generation task's responses
split into reasoning and answer before its filters run, which see the answer only; samples.parquet gets
each document's reasoning (its first Instance's first response, as ``filtered``), its length in chars and in
tokens (the executor's ``reasoning_tokens``, plans/results/manifest.py)."""

from __future__ import annotations

from typing import Any

import polars as pl

from lmeval.plans import Reasoning, Split, parse_reasoning, split_response
from lmeval.scorer.errors import ScoreError


def plan_reasoning(config: dict[str, Any]) -> Reasoning | None:
    """The plan's ``run.reasoning`` (None when it has none: scoring is what it was before the setting)."""
    run = config.get("run") if isinstance(config, dict) else None
    try:
        return parse_reasoning(run.get("reasoning") if isinstance(run, dict) else None)
    except ValueError as e:
        raise ScoreError(f"plan config: {e}") from None


def answers(resps: pl.Series, fmt: Reasoning) -> pl.Series:
    """Each Instance's responses (List(String)) with every response replaced by its answer part."""
    out = [
        None if lst is None else [None if t is None else split_response(t, fmt).answer for t in lst]
        for lst in resps.to_list()
    ]
    return pl.Series(resps.name, out, dtype=pl.List(pl.String))


def doc_reasoning(
    doc_ids: pl.Series, resps: pl.Series, docs: pl.Series, fmt: Reasoning, tokens: pl.Series | None = None
) -> pl.DataFrame:
    """``reasoning`` (String, null: none), ``reasoning_chars``, ``reasoning_tokens`` (Int64; from ``tokens``,
    the rows' ``reasoning_tokens``) and ``answer`` per document of ``docs``, from ``doc_ids``/``resps`` (one
    row per Instance, sorted by doc_id then idx): the first response's."""
    first: dict[int, Split | None] = {}
    count: dict[int, int | None] = {}
    toks = tokens.to_list() if tokens is not None else [None] * len(doc_ids)
    for d, lst, n in zip(doc_ids.to_list(), resps.to_list(), toks, strict=True):
        if d not in first:
            text = lst[0] if lst else None
            first[d] = None if text is None else split_response(text, fmt)
            count[d] = n
    splits = [first.get(d) for d in docs.to_list()]
    texts = [None if s is None else s.reasoning for s in splits]
    ntok = [None if t is None else count.get(d) for d, t in zip(docs.to_list(), texts, strict=True)]
    return pl.DataFrame(
        {
            "reasoning": pl.Series(texts, dtype=pl.String),
            "reasoning_chars": pl.Series([None if t is None else len(t) for t in texts], dtype=pl.Int64),
            "reasoning_tokens": pl.Series(ntok, dtype=pl.Int64),
            "answer": pl.Series([None if s is None else s.answer for s in splits], dtype=pl.String),
        }
    )


def generation_responses(
    rows: pl.DataFrame, docs: pl.Series, fmt: Reasoning | None
) -> tuple[pl.Series, pl.DataFrame | None]:
    """A generation task's responses as its filters see them (``response`` where ``responses`` is null) and,
    with ``fmt``, their answer parts and each document's reasoning (``doc_reasoning``)."""
    resps = rows["responses"]
    if resps.null_count():
        resps = rows.select(pl.coalesce(pl.col("responses"), pl.concat_list(pl.col("response")))).to_series()
    if fmt is None:
        return resps, None
    tokens = rows["reasoning_tokens"] if "reasoning_tokens" in rows.columns else None
    return answers(resps, fmt), doc_reasoning(rows["doc_id"], resps, docs, fmt, tokens)


def cut_note(task: str, rows: pl.DataFrame, fmt: Reasoning) -> str | None:
    """A diagnostic when responses hit ``max_gen_toks`` (finish reason ``length``): how many were cut inside
    the reasoning block and how many in the answer; None when none was cut."""
    forced = int(rows["thinking_forced"].sum()) if "thinking_forced" in rows.columns else 0
    cut = rows.filter(pl.col("finish_reason") == "length")["response"].to_list()
    if forced:  # under a thinking budget (plans/vocab/budgets.py): cut thinking was closed and answered
        return (
            f"task {task}: {forced} of {rows.height} responses ran out of run.thinking_budget (end marker forced, "
            f"then answered) and {len(cut)} hit the answer budget"
        ) + ("" if not cut else " (run.answer_budget, else the task's max_gen_toks)")
    if not cut:
        return None
    thinking = sum(1 for t in cut if t is not None and not split_response(t, fmt).closed)
    return (
        f"task {task}: {len(cut)} of {rows.height} responses hit max_gen_toks, {thinking} inside the reasoning "
        f"block (run.reasoning.unclosed={fmt.unclosed}) and {len(cut) - thinking} in the answer; "
        f"run.thinking_budget=N gives thinking N tokens of its own and the answer max_gen_toks"
    )
