"""Agreement of two judges on the same answers (#62 item 3): Cohen's kappa over their labels (a grade, or a | b |
tie, taken as a category) and Krippendorff's alpha for two coders with no missing values (interval distance for
grades, nominal for verdicts), over the documents both judges graded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """``(p_o - p_e) / (1 - p_e)``: observed agreement against the agreement of the two judges' label frequencies;
    None without documents, 1.0 when both judges give one and the same label throughout."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in ca) / (n * n)
    return 1.0 if p_e == 1.0 else (p_o - p_e) / (1 - p_e)


def krippendorff_alpha(a: Sequence[Hashable], b: Sequence[Hashable], metric: str = "interval") -> float | None:
    """``1 - D_o / D_e`` for two coders: D_o the mean distance within a document's pair, D_e the mean distance over
    every pair of the 2N values pooled (``interval``: squared difference; ``nominal``: 0 or 1). None without
    documents or without any variation (D_e = 0)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None

    values = [*a, *b]
    m = len(values)
    if metric == "interval":
        xs = [float(v) for v in values]  # type: ignore[arg-type]
        d_o = sum((xs[i] - xs[n + i]) ** 2 for i in range(n)) / n
        s1, s2 = sum(xs), sum(x * x for x in xs)
        d_e = (2 * m * s2 - 2 * s1 * s1) / (m * (m - 1))  # the sum of (x_i - x_j)^2 over ordered pairs i != j
    else:
        d_o = float(sum(x != y for x, y in zip(a, b, strict=True))) / n
        d_e = 1 - sum(c * (c - 1) for c in Counter(values).values()) / (m * (m - 1))
    return None if d_e <= 1e-12 else 1.0 - d_o / d_e
