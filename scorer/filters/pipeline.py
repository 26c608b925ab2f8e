"""A task's filter pipelines (``filter_list``): read from the plan's config, and run over all responses.

A pipeline is a list of steps ``{"function": name, **kwargs}``; steps run in order over the responses of
all Instances, each the registered filter of that name (``scorer.filters.registry``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from lmeval.scorer import usercode as pyref
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters.registry import FILTERS, Context
from lmeval.scorer.filters.responses import Responses

DEFAULT_PIPELINE: list[dict[str, Any]] = [{"function": "take_first"}]


@dataclass
class Pipeline:
    name: str
    steps: list[dict[str, Any]]


@dataclass
class FilterOutput:
    """Filtered response of every Instance: a polars String column (``scalar``) or Python objects."""

    scalar: pl.Series | None = None
    py: list[Any] | None = None
    kind: str = "py"  # "scalar": one str per instance; "py": anything lm-eval could produce

    def to_py(self) -> list[Any]:
        if self.py is not None:
            return self.py
        assert self.scalar is not None
        return self.scalar.to_list()


def pipelines_of(filter_list: list[dict[str, Any]] | None, task: str) -> list[Pipeline]:
    """The task's named pipelines (lm-eval's single ``none``/take_first pipeline when none are set)."""
    if not filter_list:
        return [Pipeline("none", list(DEFAULT_PIPELINE))]
    out = []
    for i, fc in enumerate(filter_list):
        name = fc.get("name")
        steps = fc.get("filter")
        if not isinstance(name, str) or not isinstance(steps, list):
            raise ScoreError(f"task {task}: filter_list[{i}] needs 'name' and a 'filter' list")
        for j, st in enumerate(steps):
            fn = st.get("function") if isinstance(st, dict) else None
            if fn not in FILTERS:
                raise ScoreError(f"task {task}: filter {name!r} step {j}: unknown filter function {fn!r}")
            for key in ("regex_pattern",):
                if key in st:
                    _compile(st[key], task, name, key)
            if fn == "multi_choice_regex":
                for rx in st.get("regexes_to_ignore") or []:
                    _compile(rx, task, name, "regexes_to_ignore")
            if fn == "take_first_k" and "k" not in st:
                raise ScoreError(f"task {task}: filter {name!r} step {j}: take_first_k needs 'k'")
        out.append(Pipeline(name, steps))
    return out


def _compile(pattern: Any, task: str, filt: str, key: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise ScoreError(f"task {task}: filter {filt!r}: {key} must be a string, got {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ScoreError(f"task {task}: filter {filt!r}: invalid regex in {key} {pattern!r}: {e}") from None


def apply_pipeline(
    pipe: Pipeline,
    resps: pl.Series | list[Any],
    docs: Callable[[], list[dict[str, Any]]],
    task: str,
    trust: pyref.Trust | None,
) -> FilterOutput:
    """Run ``pipe`` over the responses of all Instances (``resps``: a List(String) column or Python lists).

    ``docs`` lazily gives each Instance's document (only filters that read documents call it).
    """
    st = Responses.from_series(resps) if isinstance(resps, pl.Series) else Responses.from_py(resps)
    for j, step in enumerate(pipe.steps):
        fn = step.get("function")
        where = f"task {task}: filter {pipe.name!r} step {j} ({fn})"
        filt = FILTERS.get(fn) if isinstance(fn, str) else None
        if filt is None:
            raise ScoreError(f"{where}: unknown filter function {fn!r}")
        kw = {k: v for k, v in step.items() if k != "function"}
        try:
            st = filt.apply(st, kw, Context(docs, where, trust))
        except (IndexError, KeyError, TypeError, ValueError, AssertionError, AttributeError) as e:
            raise ScoreError(f"{where}: {type(e).__name__}: {e}") from None
    if st.values is None and not st.nested:
        return FilterOutput(scalar=st.rows.sort("_r")["v"], kind="scalar")
    return FilterOutput(py=st.to_py(), kind="py")
