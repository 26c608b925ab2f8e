"""The ``pass_at_k`` metric: HF ``code_eval``'s pass@k over candidate programs run in ``scorer.sandbox``
(``scorer.passk``: the estimator and the runner, shared with lmeval's humaneval/mbpp hooks)."""

from __future__ import annotations

from typing import Any

from lmeval.scorer.metrics.registry import builtin
from lmeval.scorer.passk import estimate, pass_at_k

__all__ = ["PASS_AT_K", "estimate", "pass_at_k"]


def _generate(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    return pass_at_k([gold], [result], **kwargs)


PASS_AT_K = builtin("pass_at_k", generate=_generate, runs_code=True, unit=True, key_prefix="pass@")
