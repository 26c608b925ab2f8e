"""pass@k: HF ``code_eval``'s unbiased estimator (Chen et al. 2021) over candidate programs run in
``scorer.sandbox``; the one implementation behind the ``pass_at_k`` metric (``scorer.metrics.pass_at_k``) and
lmeval's humaneval/mbpp hooks (``scorer.usercode.hooks``), below both so that neither imports the other."""

from __future__ import annotations

from typing import Any

import numpy as np


def estimate(n: int, c: int, k: int) -> float:
    """Unbiased pass@k, 1 - C(n-c, k) / C(n, k), for n samples of which c passed (code_eval's product form)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k(
    references: list[str], predictions: list[list[str]], k: Any = None, timeout: float = 3.0
) -> dict[str, float]:
    """HF code_eval's ``compute(...)[0]`` over one or more problems: each candidate runs as
    ``candidate + "\\n" + reference`` in the sandbox; keys ``pass@K`` for each k every problem has K
    candidates for."""
    from lmeval.scorer import sandbox  # on first use: importing the metrics loads no sandbox

    ks = [k] if isinstance(k, int) else list(k or [1])
    totals, corrects = [], []
    for ref, cands in zip(references, predictions, strict=True):
        if isinstance(cands, str):
            cands = [cands]
        passed = 0
        for cand in cands:
            res = sandbox.check_program(cand + "\n" + ref, timeout)
            passed += int(bool(res.passed))
        totals.append(len(cands))
        corrects.append(passed)
    out = {}
    for kk in ks:
        if all(n >= kk for n in totals):
            out[f"pass@{kk}"] = float(np.mean([estimate(n, c, kk) for n, c in zip(totals, corrects, strict=True)]))
    return out
