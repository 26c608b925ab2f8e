"""Before a model runs: would scoring this plan refuse its user code? (``lmeval run`` checks first.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lmeval.plans import is_user_ref, read_header
from lmeval.scorer.usercode.refs import Trust, locate_ref

_USER_CODE_FIELDS = ("process_results", "metric_list", "filter_list")


def check_user_code(plan: str | Path, trusted: bool, include: Any) -> None:
    """``score``'s one-line error for the first user function the plan's scoring would refuse: without
    trust, any; with it, one whose task folder is not found (under ``include``, as ``lmeval score
    --include-path``) or has changed."""
    trust = Trust.of(include) if trusted else None
    for t in read_header(plan).tasks:
        for field in _USER_CODE_FIELDS:
            for ref in _refs(t.config.get(field)):
                locate_ref(ref, trust, f"task {t.name}: {field}")


def _refs(value: Any) -> Iterator[dict[str, Any]]:
    """The user function references in a config value (lmeval's own ``builtin`` hooks are not user code)."""
    if isinstance(value, dict):
        if is_user_ref(value):
            yield value
        else:
            for v in value.values():
                yield from _refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)
