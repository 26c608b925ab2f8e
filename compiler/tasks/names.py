"""The names ``lmeval ls`` lists: every name ``run.tasks``/``+task`` can compile, filtered."""

from __future__ import annotations

import fnmatch

from lmeval.common import CONF_DIR
from lmeval.compiler.tasks.lm_eval_catalog import QUALIFIER, Listed, listing
from lmeval.compiler.tasks.lookup import include_index


def find_names(
    include_path: list[str], kind: str | None = None, source: str | None = None, pattern: str | None = None
) -> list[Listed]:
    """``lmeval ls``: every name ``run.tasks``/``+task`` can compile (``catalog.listing``: include path
    folders, conf/task, lm-eval's catalog), of one ``kind`` (task, group, tag) and ``source`` when given,
    whose name (or the name without ``lm_eval:``) matches ``pattern``: a shell-style glob or a substring."""
    inc = include_index(include_path) if include_path else None
    return [
        r
        for r in listing(CONF_DIR / "task", inc)
        if (kind is None or r.kind == kind) and (source is None or r.source == source) and _match(r.name, pattern)
    ]


def _match(name: str, pattern: str | None) -> bool:
    if pattern is None:
        return True
    names = {name, name.removeprefix(QUALIFIER)}
    if any(c in pattern for c in "*?["):
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)
    return any(pattern in n for n in names)
