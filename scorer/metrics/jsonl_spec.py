"""jsonl_spec: the checks of a JSONL task spec on one generation (``scorer.metrics.spec_scoring``), keys per check."""

from __future__ import annotations

from typing import Any

from lmeval.scorer.metrics.registry import builtin


def _generate(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    from lmeval.scorer.metrics import spec_scoring

    return dict(spec_scoring.score_spec_doc(doc, result))


JSONL_SPEC = builtin("jsonl_spec", generate=_generate)
