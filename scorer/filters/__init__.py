"""Filters: lm-eval's filter pipelines (``filter_list``) over every Instance's responses of a task.

``FILTERS`` maps each filter name (exactly ``plans.scoring.FILTERS``) to its one implementation, as lm-eval's
registry of that name; each built-in filter is a function of a module here that registers itself
(``register_filter``), and the modules are imported in the line of built-ins below. Each takes the responses as
one polars frame (``scorer.filters.responses``) and returns a new one: the string filters and the structural ones
(take_first, take_first_k, majority_vote) are vectorised; ``map`` runs its Python rule once per distinct
value; the filters that need documents or user code (multi_choice_regex, custom) loop in Python over
lm-eval's nested lists. Rows polars cannot treat exactly like Python's ``re``/``str`` are redone one by one
by ``scorer.regex.ops``, inside the same function.
"""

import warnings
from typing import Any

# the built-in filters, each registering itself, in the contract's order (plans.scoring.FILTERS)
# isort: off
from lmeval.scorer.filters import regex as regex, select as select, strings as strings
from lmeval.scorer.filters import multi_choice as multi_choice, custom as custom

# isort: on
from lmeval.scorer.filters.pipeline import DEFAULT_PIPELINE as DEFAULT_PIPELINE
from lmeval.scorer.filters.pipeline import FilterOutput as FilterOutput
from lmeval.scorer.filters.pipeline import Pipeline as Pipeline
from lmeval.scorer.filters.pipeline import apply_pipeline as apply_pipeline
from lmeval.scorer.filters.pipeline import pipelines_of as pipelines_of
from lmeval.scorer.filters.registry import FILTERS as FILTERS
from lmeval.scorer.filters.registry import Context as Context
from lmeval.scorer.filters.registry import FilterFunction as FilterFunction
from lmeval.scorer.filters.registry import register_filter as register_filter


def __getattr__(name: str) -> Any:
    """``FILTER_REGISTRY``, the registry's name until 0.1.0 (documented): ``FILTERS`` with a DeprecationWarning."""
    if name == "FILTER_REGISTRY":
        warnings.warn(
            "lmeval.scorer.filters.FILTER_REGISTRY is deprecated: use lmeval.scorer.filters.FILTERS",
            DeprecationWarning,
            stacklevel=2,
        )
        return FILTERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
