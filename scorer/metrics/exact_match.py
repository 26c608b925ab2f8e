"""exact_match: HF evaluate's per-document function as lm-eval runs it, and its vectorised (polars) path.

Registered with the multiple-choice metrics (``scorer.metrics.loglikelihood``: exact_match scores both
output types). The fast path leaves rows it cannot do exactly (NUL characters) to the per-document function."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from lmeval.plans import METRIC_SPECS as VOCABULARY
from lmeval.scorer import regex as regex_ops
from lmeval.scorer.errors import ScoreError

_PUNCT_CLASS = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in string.punctuation) + "]"


def exact_match_np(
    predictions: Sequence[Any],
    references: Sequence[Any],
    regexes_to_ignore: Sequence[str] | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> float:
    """HF evaluate's exact_match as lm-eval runs it (numpy string arrays, mean of equalities)."""
    if regexes_to_ignore is not None:
        preds = np.array([x for x in predictions])
        refs = np.array([x for x in references])
        for s in regexes_to_ignore:
            preds = np.array([re.sub(s, "", x) for x in preds])
            refs = np.array([re.sub(s, "", x) for x in refs])
    else:
        preds = np.asarray(predictions)
        refs = np.asarray(references)
    if ignore_case:
        preds = np.char.lower(preds)
        refs = np.char.lower(refs)
    if ignore_punctuation:
        table = string.punctuation.maketrans("", "", string.punctuation)
        preds = np.char.translate(preds, table=table)  # type: ignore[call-overload]
        refs = np.char.translate(refs, table=table)  # type: ignore[call-overload]
    if ignore_numbers:
        table = string.digits.maketrans("", "", string.digits)
        preds = np.char.translate(preds, table=table)  # type: ignore[call-overload]
        refs = np.char.translate(refs, table=table)  # type: ignore[call-overload]
    return float(np.mean(preds == refs))


def exact_match_vector(
    preds: pl.Series, golds: pl.Series, kwargs: dict[str, Any], cache: dict[Any, Any] | None = None
) -> pl.Series:
    """Per-row exact_match (0.0/1.0) with lm-eval's options; preds and golds are String columns.

    Regex removal runs in polars where exact (see ``regex_ops.sub``); case folding runs in polars on ASCII
    rows and through numpy's ``char.lower`` (what lm-eval calls) on the others; punctuation and digit
    removal only touch ASCII characters, so polars is exact everywhere. Rows containing NUL characters
    (numpy drops trailing NULs) are computed exactly as lm-eval does, one by one. ``cache`` keeps the
    normalised golds between calls (a task's filters share them).
    """
    known = {"regexes_to_ignore", "ignore_case", "ignore_punctuation", "ignore_numbers"}
    extra = set(kwargs) - known
    if extra:
        raise TypeError(f"exact_match got unexpected options {sorted(extra)}")
    p = preds.fill_null("")
    g = golds.fill_null("")
    key = ("em", id(golds), repr(sorted(kwargs.items())))
    if cache is not None and key in cache:
        g_norm, g_nul = cache[key]
    else:
        g_norm, g_nul = _normalise(g, kwargs), g.str.contains("\x00", literal=True)
        if cache is not None:
            cache[key] = (g_norm, g_nul)
    p_norm = _normalise(p, kwargs)
    out = (p_norm == g_norm).cast(pl.Float64)
    nul = p.str.contains("\x00", literal=True) | g_nul
    if nul.any():
        idx = pl.arange(0, len(p), eager=True).filter(nul)
        vals = [
            exact_match_np(predictions=[a], references=[b], **kwargs)
            for a, b in zip(p.filter(nul).to_list(), g.filter(nul).to_list(), strict=True)
        ]
        out = out.scatter(idx, pl.Series(vals, dtype=pl.Float64))
    return out


def _normalise(s: pl.Series, kwargs: dict[str, Any]) -> pl.Series:
    for rx in kwargs.get("regexes_to_ignore") or []:
        s = regex_ops.sub(s, rx)
    if kwargs.get("ignore_case"):
        ascii_rows = regex_ops.ascii_mask(s)
        low = s.str.to_lowercase()
        if not ascii_rows.all():
            idx = pl.arange(0, len(s), eager=True).filter(~ascii_rows)
            other = s.filter(~ascii_rows).to_list()
            # numpy works on fixed-width arrays: strings whose lowercase is longer get their own array,
            # exactly as lm-eval's one-element call does
            lowered = np.char.lower(np.array(other, dtype=str)).tolist()
            for i, x in enumerate(other):
                if len(x.lower()) != len(x):
                    lowered[i] = np.char.lower(np.array([x])).tolist()[0]
            low = low.scatter(idx, pl.Series(lowered, dtype=pl.String))
        s = low
    if kwargs.get("ignore_punctuation"):
        s = s.str.replace_all(_PUNCT_CLASS, "")
    if kwargs.get("ignore_numbers"):
        s = s.str.replace_all("[0-9]", "")
    return s


def generate_exact_match(gold: Any, result: Any, kwargs: dict[str, Any], doc: dict[str, Any]) -> Any:
    return {"exact_match": exact_match_np(predictions=[result], references=[gold], **kwargs)}


def check_exact_match_options(task: str, kwargs: dict[str, Any]) -> None:
    """exact_match's options: the contract's (``plans.scoring``), regexes that compile."""
    known = set(VOCABULARY["exact_match"].options)
    extra = sorted(set(kwargs) - known)
    if extra:
        raise ScoreError(f"task {task}: metric exact_match: unknown options {extra} (known: {sorted(known)})")
    rx = kwargs.get("regexes_to_ignore")
    if rx is None:
        return
    if not isinstance(rx, list):
        raise ScoreError(f"task {task}: metric exact_match: regexes_to_ignore must be a list, got {rx!r}")
    for p in rx:
        try:
            re.compile(p)
        except (re.error, TypeError) as e:
            raise ScoreError(
                f"task {task}: metric exact_match: invalid regex in regexes_to_ignore {p!r}: {e}"
            ) from None
