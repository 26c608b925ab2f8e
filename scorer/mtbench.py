"""MT-Bench's numbers as FastChat reports them (lm-sys/FastChat ``fastchat/llm_judge/show_result.py``), from a
judge's parsed grades (``scorer.judgegrades``: unparsable grades are None, dropped from every mean and counted).

Single-answer grading (``display_result_single``): turn 1's mean and turn 2's mean over their parsed grades, and
the overall as FastChat prints it: the mean over every parsed judgment of both turns pooled (not the mean of the
two turn means; they differ when the turns have different numbers of parsed grades). Per category: the same pooled
mean over the category's parsed judgments of both turns.

Pairwise against a baseline (``display_result_pairwise``): a pair whose either order is unparsed is dropped; a
tie in the first order or a disagreement of the two orders is a tie; ``win_rate = win / (win + loss + tie)``,
``loss_rate = loss / (...)``, ``win_rate_adjusted = (win + 0.5 * tie) / (...)``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SUMMARY_FILTER = "judge"  # the filter column of the summary metrics in results.json ("turn1,judge", ...)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _stderr(xs: Sequence[float]) -> float | None:
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) / math.sqrt(len(xs))


@dataclass(frozen=True)
class SingleSummary:
    """Per turn its mean; the pooled overall; per category its pooled mean; parsed and unparsed counts."""

    turns: list[float | None]
    turn_n: list[int]
    overall: float | None
    overall_stderr: float | None
    categories: dict[str, float | None] = field(default_factory=dict)
    n: int = 0
    unparsed: int = 0

    def metrics(self) -> dict[str, Any]:
        """As results.json metrics (``METRIC,judge``): ``turnK``, ``overall`` (with its stderr), ``n``,
        ``unparsed``, and one per category (its name)."""
        f = SUMMARY_FILTER
        out: dict[str, Any] = {f"turn{k + 1},{f}": m for k, m in enumerate(self.turns)}
        out[f"overall,{f}"] = self.overall
        out[f"overall_stderr,{f}"] = "N/A" if self.overall_stderr is None else self.overall_stderr
        out |= {f"{c},{f}": m for c, m in self.categories.items()}
        return out | {f"graded,{f}": self.n, f"unparsed,{f}": self.unparsed}


def single_summary(
    turns: Sequence[Mapping[int, float | None]], categories: Mapping[int, str] | None = None
) -> SingleSummary:
    """``turns``: per turn, doc id -> grade (None: unparsed); ``categories``: doc id -> category (categories in
    first-seen order over the documents' ids, ascending)."""
    parsed = [[float(g) for g in t.values() if g is not None] for t in turns]
    pooled = [g for t in parsed for g in t]
    cats: dict[str, list[float]] = {}
    if categories:
        for doc_id in sorted(categories):
            cats.setdefault(categories[doc_id], [])
        for t in turns:
            for doc_id, g in t.items():
                if g is not None and doc_id in categories:
                    cats[categories[doc_id]].append(float(g))
    unparsed = sum(g is None for t in turns for g in t.values())
    return SingleSummary(
        turns=[_mean(t) for t in parsed],
        turn_n=[len(t) for t in parsed],
        overall=_mean(pooled),
        overall_stderr=_stderr(pooled),
        categories={c: _mean(v) for c, v in cats.items()},
        n=len(pooled),
        unparsed=unparsed,
    )


@dataclass(frozen=True)
class PairwiseSummary:
    win: int
    loss: int
    tie: int
    dropped: int  # pairs with an unparsed order (FastChat's "error" rows)

    @property
    def total(self) -> int:
        return self.win + self.loss + self.tie

    def rates(self) -> dict[str, float | None]:
        n = self.total
        if n == 0:
            return {"win_rate": None, "loss_rate": None, "win_rate_adjusted": None}
        adjusted = (self.win + 0.5 * self.tie) / n
        return {"win_rate": self.win / n, "loss_rate": self.loss / n, "win_rate_adjusted": adjusted}

    def metrics(self) -> dict[str, Any]:
        """``win_rate``, ``loss_rate``, ``win_rate_adjusted`` and the counts (``win``, ``loss``, ``tie``,
        ``unparsed``), as results.json metrics under ``SUMMARY_FILTER``."""
        f = SUMMARY_FILTER
        counts = {"win": self.win, "loss": self.loss, "tie": self.tie, "unparsed": self.dropped}
        return {f"{k},{f}": v for k, v in {**self.rates(), **counts}.items()}


def pairwise_summary(verdicts: Sequence[str | None]) -> PairwiseSummary:
    """``verdicts``: per judged pair the verdict of both orders (``plans.consistent``: a, b, tie, or None when an
    order is unparsed), from the judged run's side: a is a win."""
    win = sum(v == "a" for v in verdicts)
    loss = sum(v == "b" for v in verdicts)
    tie = sum(v == "tie" for v in verdicts)
    return PairwiseSummary(win, loss, tie, sum(v is None for v in verdicts))
