"""Deprecated: the frozen JSONL task spec moved to ``lmeval.compiler.jsonl_spec`` (issue #37); this old path
re-exports it with a DeprecationWarning, for one release."""

import warnings
from typing import Any

from lmeval.compiler import jsonl_spec as _moved

__all__ = list(_moved.__all__)

warnings.warn(
    "lmeval.compiler.spec is deprecated and will be removed in the next release: import lmeval.compiler.jsonl_spec",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    """Every name of the new path, the same objects."""
    if name in _moved.__all__:
        return getattr(_moved, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
