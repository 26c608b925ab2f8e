"""The filter registry: name -> ``FilterFunction`` (lm-eval's FILTER_REGISTRY, typed), and what a filter reads.

Each built-in filter registers itself (``register_filter``) from its module of this package."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from lmeval.scorer import usercode as pyref
from lmeval.scorer.filters.responses import Responses


@dataclass(frozen=True)
class Context:
    """What a filter may read besides the responses."""

    docs: Callable[[], list[dict[str, Any]]]  # each Instance's document (loaded on first call)
    where: str  # "task T: filter F step J (name)", for messages
    trust: pyref.Trust | None  # consent to run the task's code (custom filters)


@dataclass(frozen=True)
class FilterFunction:
    """The implementation of one filter name of ``filter_list`` steps (the contract's ``plans.scoring.Filter``
    says which arguments it takes)."""

    name: str
    apply: Callable[[Responses, dict[str, Any], Context], Responses]  # (responses, step arguments, context)


FILTERS: dict[str, FilterFunction] = {}  # name -> implementation (lm-eval's FILTERS); = plans.scoring.FILTERS


def register_filter(name: str) -> Callable[[Callable[..., Responses]], Callable[..., Responses]]:
    """Decorator: register the function as filter ``name``; a name already registered is refused (ValueError)."""

    def add(fn: Callable[[Responses, dict[str, Any], Context], Responses]) -> Callable[..., Responses]:
        if name in FILTERS:
            raise ValueError(f"filter {name!r} is registered twice")
        FILTERS[name] = FilterFunction(name, fn)
        return fn

    return add


def string_values(name: str, st: Responses) -> pl.Series:
    """The String values of every row; a filter that needs strings fails on anything else (lm-eval's
    ``.lower()`` etc. raise AttributeError)."""
    v = st.column()
    if v is None:
        bad = next(x for x in st.objects() if not (isinstance(x, str) or x is None))
        raise TypeError(f"{name} needs string responses, got {type(bad).__name__} {bad!r}")
    return v
