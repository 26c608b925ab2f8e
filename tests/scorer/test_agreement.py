"""scorer/agreement.py: Cohen's kappa as scikit-learn computes it, Krippendorff's alpha as its coincidence-matrix
form (written out here, nominal and interval), and the degenerate cases (no documents, no variation)."""

from __future__ import annotations

from collections import Counter

import pytest
from sklearn.metrics import cohen_kappa_score

from lmeval.scorer import cohen_kappa, krippendorff_alpha


def alpha_reference(a: list[object], b: list[object], interval: bool) -> float:
    o: Counter[tuple[object, object]] = Counter()
    for x, y in zip(a, b, strict=True):
        o[(x, y)] += 1
        o[(y, x)] += 1
    nc: Counter[object] = Counter()
    for (c, _), v in o.items():
        nc[c] += v
    n = sum(nc.values())

    def d(c: object, k: object) -> float:
        return (float(c) - float(k)) ** 2 if interval else float(c != k)  # type: ignore[arg-type]

    observed = sum(v * d(c, k) for (c, k), v in o.items())
    expected = sum(nc[c] * nc[k] * d(c, k) for c in nc for k in nc)
    return 1 - (n - 1) * observed / expected


VERDICTS = (["a", "b", "tie", "a", "a", "b", "tie", "tie", "a"], ["a", "tie", "tie", "a", "b", "b", "tie", "a", "a"])
GRADES = ([8.0, 7.0, 9.0, 3.0, 5.0, 10.0, 6.5, 1.0], [7.0, 7.0, 8.0, 4.0, 5.0, 9.0, 6.0, 2.0])


@pytest.mark.parametrize("pair", [VERDICTS, GRADES])
def test_kappa_is_scikit_learns(pair: tuple[list[object], list[object]]) -> None:
    a, b = pair
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score([str(x) for x in a], [str(x) for x in b]))


def test_alpha_is_the_coincidence_form() -> None:
    assert krippendorff_alpha(*VERDICTS, metric="nominal") == pytest.approx(alpha_reference(*VERDICTS, False))
    assert krippendorff_alpha(*GRADES, metric="interval") == pytest.approx(alpha_reference(*GRADES, True))


def test_degenerate_cases() -> None:
    assert cohen_kappa([], []) is None and krippendorff_alpha([], []) is None
    assert cohen_kappa(["a", "a"], ["a", "a"]) == 1.0
    assert krippendorff_alpha([5.0, 5.0], [5.0, 5.0]) is None  # no variation: alpha undefined
