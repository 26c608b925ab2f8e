"""The ``custom`` filter: a user's ``filter_fn(resps, docs)`` reference, run only with consent."""

from __future__ import annotations

from typing import Any

from lmeval.scorer import usercode as pyref
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.filters.registry import Context, register_filter
from lmeval.scorer.filters.responses import Responses


@register_filter("custom")
def _custom(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """A user's ``filter_fn(resps, docs) -> resps`` (a function reference; runs only with consent)."""
    ref = kw.get("filter_fn")
    if not isinstance(ref, dict) or not pyref.is_ref(ref):
        raise ScoreError(f"{ctx.where}: custom filter needs filter_fn as a function reference")
    f = pyref.load_ref(ref, ctx.trust, ctx.where)
    return Responses.from_py(list(f(st.to_py(), ctx.docs())))
