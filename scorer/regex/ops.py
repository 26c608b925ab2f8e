"""Regex-based string operations with lm-eval's semantics, vectorised with polars where that is exact.

Every function takes and returns a polars String Series of the same length. Rows that polars can handle
exactly (see ``regex_translate``) go through Rust; the rest go through Python's ``re`` one by one.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from lmeval.scorer.regex.translation import PY_ASCII_WHITESPACE, RustPattern, translate

_NON_ASCII = r"[^\x00-\x7F]"


def ascii_mask(s: pl.Series, *, no_trailing_newline: bool = False) -> pl.Series:
    """True where a row is ASCII (and, if asked, does not end with a newline)."""
    ok = s.str.len_bytes() == s.str.len_chars()
    if no_trailing_newline:
        ok = ok & ~s.str.ends_with("\n")
    return ok.fill_null(False)


def _merge(
    s: pl.Series, fast_mask: pl.Series, fast: Callable[[pl.Series], pl.Series], slow: Callable[[str], str]
) -> pl.Series:
    """``fast`` on every row, then rows outside ``fast_mask`` replaced by ``slow`` (Python) values."""
    out = fast(s).cast(pl.String)
    n_slow = len(s) - int(fast_mask.sum())
    if n_slow == 0:
        return out.alias(s.name)
    idx = pl.arange(0, len(s), eager=True).filter(~fast_mask)
    slow_vals = pl.Series([slow(x) for x in s.filter(~fast_mask).to_list()], dtype=pl.String)
    return out.scatter(idx, slow_vals).alias(s.name)


def py_strip(x: str) -> str:
    return x.strip()


def strip(s: pl.Series) -> pl.Series:
    return _merge(s, ascii_mask(s), lambda t: t.str.strip_chars(PY_ASCII_WHITESPACE), py_strip)


def lower(s: pl.Series) -> pl.Series:
    return _merge(s, ascii_mask(s), lambda t: t.str.to_lowercase(), str.lower)


def upper(s: pl.Series) -> pl.Series:
    return _merge(s, ascii_mask(s), lambda t: t.str.to_uppercase(), str.upper)


def sub(s: pl.Series, pattern: str, *, ascii_rows_only: bool = False) -> pl.Series:
    """``re.sub(pattern, "", x)`` for every row (only ASCII rows are exact if ``ascii_rows_only``)."""
    rx = re.compile(pattern)
    rp = translate(pattern)
    if rp is None:
        return pl.Series(s.name, [rx.sub("", x) for x in s.to_list()], dtype=pl.String)
    if ascii_rows_only or rp.unicode_safe:
        mask = (~s.str.ends_with("\n")).fill_null(True) if rp.has_end_anchor else pl.repeat(True, len(s), eager=True)
    else:
        mask = ascii_mask(s, no_trailing_newline=rp.has_end_anchor)
    return _merge(s, mask, lambda t: t.str.replace_all(rp.pattern, "", literal=False), lambda x: rx.sub("", x))


def py_regex_extract(rx: re.Pattern[str], resp: object, group_select: int, fallback: str) -> str:
    """lm-eval's RegexFilter on one response (raises IndexError like it for an out-of-range group_select)."""
    if not isinstance(resp, str):
        resp = ""
    found = rx.findall(resp)
    if not found:
        return fallback
    m = found[group_select]
    if isinstance(m, tuple):
        nonempty = [g for g in m if g]
        if not nonempty:
            return fallback.strip()  # lm-eval strips the fallback in this one case
        m = nonempty[0]
    return m.strip()


def regex_extract(s: pl.Series, pattern: str, group_select: int, fallback: str) -> pl.Series:
    """lm-eval's RegexFilter over a column of responses (nulls count as "")."""
    rx = re.compile(pattern)
    s = s.fill_null("")
    rp = translate(pattern)

    def slow(x: str) -> str:
        return py_regex_extract(rx, x, group_select, fallback)

    if rp is None or (rp.has_assertions and rp.n_groups > 0 and group_select != 0):
        return pl.Series(s.name, [slow(x) for x in s.to_list()], dtype=pl.String)
    if rp.unicode_safe:
        mask = (~s.str.ends_with("\n")).fill_null(True) if rp.has_end_anchor else pl.repeat(True, len(s), eager=True)
    else:
        mask = ascii_mask(s, no_trailing_newline=rp.has_end_anchor)
    out = _merge(s, mask, lambda t: _fast_extract(t, rp, group_select, fallback), slow)
    if rp.matches_non_ascii:
        # str.strip() also removes non-ASCII whitespace: redo the strip of non-ASCII results in Python
        odd = ~ascii_mask(out) & mask
        if odd.any():
            idx = pl.arange(0, len(s), eager=True).filter(odd)
            out = out.scatter(idx, pl.Series([slow(x) for x in s.filter(odd).to_list()], dtype=pl.String))
    return out


def _fast_extract(t: pl.Series, rp: RustPattern, group_select: int, fallback: str) -> pl.Series:
    df = pl.DataFrame({"s": t})
    if rp.n_groups > 0 and group_select == 0:
        # first match, groups read in the full context of the string
        found = pl.col("s").str.contains(rp.pattern)
        groups = pl.col("s").str.extract_groups(rp.pattern)
    else:
        all_m = pl.col("s").str.extract_all(rp.pattern)
        df = df.with_columns(_all=all_m)
        n = pl.col("_all").list.len().cast(pl.Int64)
        in_range = (pl.lit(group_select) < n) & (pl.lit(group_select) >= -n)
        bad = df.filter((n > 0) & ~in_range)
        if bad.height:
            raise IndexError(f"group_select {group_select} out of range")
        df = df.with_columns(_sel=pl.col("_all").list.get(group_select, null_on_oob=True))
        found = n > 0
        if rp.n_groups == 0:
            groups = None
        else:
            anchored = r"\A(?:" + rp.pattern + r")\z"
            groups = pl.col("_sel").str.extract_groups(anchored)
    if rp.n_groups == 0:
        value = pl.col("_sel")
    elif rp.n_groups == 1:
        assert groups is not None
        value = groups.struct.field("1").fill_null("")
    else:
        assert groups is not None
        fields = [
            pl.when(groups.struct.field(str(i)) == "").then(None).otherwise(groups.struct.field(str(i)))
            for i in range(1, rp.n_groups + 1)
        ]
        value = pl.coalesce(fields)
    value = value.str.strip_chars(PY_ASCII_WHITESPACE)
    # null only when every group of the match is empty: lm-eval then strips the fallback (not when nothing matched)
    out = df.select(pl.when(found).then(value.fill_null(fallback.strip())).otherwise(pl.lit(fallback)).alias("v"))
    return out["v"].alias(t.name)
