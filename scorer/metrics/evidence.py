"""What a multiple-choice metric sees: one document's evidence (``ChoiceDoc``, lm-eval's ``process_results``
inputs) and the same for many documents at once as (documents x choices) arrays (``ChoiceArrays``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl


@dataclass(frozen=True)
class ChoiceDoc:
    """One multiple_choice document: ``lls``/``is_greedy`` per choice (its conditional requests), ``gold`` as
    lm-eval's process_results sees it (an index, -100 when out of range, or a list of them when
    ``multiple_target``), ``uncond`` each unconditional block's log-likelihoods (metric -> per choice) and
    ``n_tokens`` each choice's continuation token count (None where the run did not record it)."""

    lls: tuple[float, ...]
    is_greedy: tuple[bool, ...]
    choices: list[str]
    gold: Any
    multiple_target: bool
    uncond: dict[str, Sequence[float]] = field(default_factory=dict)
    n_tokens: Sequence[int | None] = ()

    def hit(self, pred: Any) -> float:
        """1.0 when the predicted index is the gold (one of the golds with several targets), else 0.0."""
        return 1.0 if (pred in self.gold if self.multiple_target else pred == self.gold) else 0.0

    def argmax_over(self, denominators: Sequence[float]) -> Any:
        """numpy's argmax of the log-likelihoods divided by ``denominators`` (first of equal maxima, NaN wins,
        division by zero as numpy does it)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.argmax(np.asarray(self.lls) / np.asarray(denominators, dtype=np.float64))


@dataclass
class ChoiceArrays:
    """``m`` multiple_choice documents with ``k`` choices each, scored at once: ``cond``/``greedy`` (m x k) the
    conditional requests' log-likelihoods and greedy flags, ``choices`` the choice texts row by row (m*k),
    ``gold`` (m,) the gold index (-100 out of range), ``uncond`` each unconditional block (m x k); ``tokens``
    gives the (m x k) continuation token counts (read on first use: it raises when the run lacks them)."""

    cond: np.ndarray
    greedy: np.ndarray
    choices: pl.Series  # String of m*k choice texts, document by document
    gold: np.ndarray
    uncond: dict[str, np.ndarray]
    tokens: Callable[[], np.ndarray]

    @cached_property
    def pred(self) -> np.ndarray:
        """The argmax of the conditional log-likelihoods per document."""
        return np.argmax(self.cond, axis=1)

    def char_lengths(self) -> np.ndarray:
        return self.choices.str.len_chars().cast(pl.Float64).to_numpy().reshape(self.cond.shape)

    def byte_lengths(self) -> np.ndarray:
        return self.choices.str.len_bytes().cast(pl.Float64).to_numpy().reshape(self.cond.shape)

    def hits(self, pred: np.ndarray) -> np.ndarray:
        """1.0 where the per-document prediction is the gold, else 0.0."""
        return np.asarray(pred == self.gold).astype(np.float64)

    def argmax_over(self, denominators: np.ndarray) -> np.ndarray:
        """Per document, numpy's argmax of the log-likelihoods divided by ``denominators`` (m x k)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.argmax(self.cond / denominators, axis=1)
