"""lmeval's built-in scoring hooks for code tasks (``!function lmeval_builtin.NAME``; plans/usercode/funcref.py).

They do what lm-eval's humaneval/mbpp ``utils.py`` hooks do, with the same numbers, but run generated
programs in ``scorer.sandbox`` instead of Hugging Face ``evaluate``'s unsandboxed ``code_eval``:
``program = candidate + "\\n" + test`` (code_eval's program), 3 s per program (code_eval's default), the
unbiased pass@k estimator of Chen et al. (2021).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lmeval.scorer.passk import pass_at_k as run_pass_at_k

TIMEOUT_S = 3.0  # wall-clock seconds per program: code_eval's default


def humaneval_pass_at_k(references: list[str], predictions: list[list[str]], k: Any = None) -> dict[str, float]:
    """lm-eval humaneval's ``utils.pass_at_k``: code_eval's ``compute(...)[0]`` (keys ``pass@K``)."""
    if k is None:
        raise ValueError("pass_at_k needs k")
    return run_pass_at_k(references, predictions, k=[k] if isinstance(k, int) else list(k), timeout=TIMEOUT_S)


def pass_at_1(references: str | list[str], predictions: str | list[Any]) -> float:
    """lm-eval mbpp's ``utils.pass_at_1``: pass@1 of each reference's candidates (one string each)."""
    if isinstance(references, str):
        references = [references]
    preds: list[Any] = list(predictions) if not isinstance(predictions, str) else [predictions]
    if preds and isinstance(preds[0], str):
        preds = [[p] for p in preds]
    return run_pass_at_k(references, preds, k=[1], timeout=TIMEOUT_S)["pass@1"]


def humaneval_build_predictions(resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
    return [[doc["prompt"] + r for r in resp] for resp, doc in zip(resps, docs, strict=True)]


def humaneval_build_predictions_instruct(resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [doc["prompt"] + (r if r.find("```") == -1 else r[: r.find("```")]) for r in resp]
        for resp, doc in zip(resps, docs, strict=True)
    ]


_BLOCK = re.compile(r"```(?:\w+)?\n?(.*?)\n?```", re.DOTALL)


def extract_code_block(text: str) -> str:
    """The first fenced block of ``"```" + text`` (the opening fence is the task's gen_prefix), else of the
    text with ```python fences made plain; "" when there is none."""
    m = _BLOCK.findall("```" + text)
    if not m:
        m = _BLOCK.findall(re.sub(r"```python", "```", text))
    return str(m[0]) if m else ""


def mbpp_build_predictions(resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
    return [[extract_code_block(r) for r in resp] for resp in resps]


HOOKS: dict[str, Callable[..., Any]] = {
    "pass_at_k": humaneval_pass_at_k,
    "pass_at_1": pass_at_1,
    "humaneval_build_predictions": humaneval_build_predictions,
    "humaneval_build_predictions_instruct": humaneval_build_predictions_instruct,
    "mbpp_build_predictions": mbpp_build_predictions,
}
