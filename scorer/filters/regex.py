"""The ``regex`` filter: lm-eval's RegexFilter, vectorised (``scorer.regex.ops``)."""

from __future__ import annotations

from typing import Any

from lmeval.scorer import regex as regex_ops
from lmeval.scorer.filters.registry import Context, register_filter, string_values
from lmeval.scorer.filters.responses import Responses


@register_filter("regex")
def _regex(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's RegexFilter: the ``group_select``-th match of ``regex_pattern`` (its first non-empty group),
    stripped; ``fallback`` when nothing matches; responses that are not strings count as ""."""
    st = st.as_lists()
    if st.values is not None:  # objects: only strings are searched (the others become "")
        t = st.as_table()
        st = t.with_table([v if isinstance(v, str) else None for v in t.values or []])
    v = regex_ops.regex_extract(
        string_values("regex", st),
        kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"),
        int(kw.get("group_select", 0)),
        kw.get("fallback", "[invalid]"),
    )
    return st.with_column(v)
