"""The filters that rewrite each response: lowercase, uppercase, remove_whitespace, map."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from lmeval.scorer import regex as regex_ops
from lmeval.scorer.filters.registry import Context, register_filter, string_values
from lmeval.scorer.filters.responses import Responses


def _string_op(name: str, op: Callable[[pl.Series], pl.Series], doc: str) -> None:
    def run(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
        st = st.as_lists()
        return st.with_column(op(string_values(name, st)))

    run.__doc__ = doc
    register_filter(name)(run)


_string_op("lowercase", regex_ops.lower, "lm-eval's LowercaseFilter: ``str.lower`` of every response.")
_string_op("uppercase", regex_ops.upper, "lm-eval's UppercaseFilter: ``str.upper`` of every response.")
_string_op("remove_whitespace", regex_ops.strip, "lm-eval's WhitespaceFilter: ``str.strip`` of every response.")


@register_filter("map")
def _map(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's MapFilter: ``mapping_dict.get(response, default_value)``, once per distinct response."""
    mapping = kw.get("mapping_dict") or {}
    default = kw.get("default_value")
    t = st.as_lists().as_table()
    assert t.values is not None
    return t.with_table([mapping.get(v, default) for v in t.values])
