"""The responses of every Instance of a task as filters see them: one flat polars frame.

lm-eval's filters take and return a list with one entry per Instance, each usually a list of responses
(after ``take_first``, one response). Here they are the rows of one frame, ``_r`` (the Instance) and
``_p`` (the position in its list), with the value either

- in a String column ``v`` (generated text: what almost every pipeline sees, vectorised in polars), or
- as an index ``o`` into ``values``, a table of Python objects (log-likelihood pairs, what a custom
  filter returns, a ``map`` to non-strings).

Every filter is written once against this frame (``scorer.filters``); converting from and to lm-eval's
nested Python lists happens here, once, with lm-eval's meaning (an Instance that is not a list is one
value; a filter that iterates it iterates that value, as lm-eval's do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl


@dataclass(frozen=True)
class Responses:
    n: int  # Instances
    rows: pl.DataFrame  # _r, _p and either v (String) or o (Int64 index into ``values``)
    values: list[Any] | None = None  # the objects ``o`` points at; None when ``v`` holds the strings
    nested: bool = True  # each Instance is a list of responses (False: one value each, as after take_first)

    # -- building ---------------------------------------------------------------------------------------

    @staticmethod
    def from_series(resps: pl.Series) -> Responses:
        """From a List(String) column, one list of responses per Instance (null: none)."""
        n = len(resps)
        lens = resps.list.len().fill_null(0)
        if n and lens.min() == 1 and lens.max() == 1:  # one response per instance: no explode needed
            flat = pl.DataFrame(
                {
                    "_r": pl.arange(0, n, eager=True),
                    "_p": pl.zeros(n, dtype=pl.Int64, eager=True),
                    "v": resps.list.first(),
                }
            )
        else:
            flat = (
                pl.DataFrame({"_r": pl.arange(0, n, eager=True), "v": resps})
                .with_columns(pl.col("v").fill_null([]))
                .with_columns(_p=pl.int_ranges(0, pl.col("v").list.len(), dtype=pl.Int64))
                .explode(["v", "_p"])
                .filter(pl.col("_p").is_not_null())
                .select("_r", "_p", "v")
            )
        return Responses(n, flat)

    @staticmethod
    def from_py(insts: Sequence[Any]) -> Responses:
        """From lm-eval's form: one entry per Instance, a list of responses or (if none is a list) one value."""
        n = len(insts)
        nested = all(isinstance(x, list) for x in insts)
        if nested:
            lens = [len(x) for x in insts]
            flat = [v for x in insts for v in x]
        else:
            lens = [1] * n
            flat = list(insts)
        if len(flat) == n and all(ln == 1 for ln in lens):  # one response each
            r, p = pl.Series("_r", np.arange(n, dtype=np.int64)), pl.Series("_p", np.zeros(n, dtype=np.int64))
        else:
            ln = np.asarray(lens, dtype=np.int64)
            starts = np.cumsum(ln) - ln
            r = pl.Series("_r", np.repeat(np.arange(n, dtype=np.int64), ln))
            p = pl.Series("_p", np.arange(len(flat), dtype=np.int64) - np.repeat(starts, ln))
        if all(isinstance(v, str) or v is None for v in flat):
            return Responses(n, pl.DataFrame({"_r": r, "_p": p, "v": pl.Series(flat, dtype=pl.String)}), None, nested)
        o = pl.Series("o", range(len(flat)), dtype=pl.Int64)
        return Responses(n, pl.DataFrame({"_r": r, "_p": p, "o": o}), flat, nested)

    # -- reading ---------------------------------------------------------------------------------------

    def column(self) -> pl.Series | None:
        """The values as one String column, one per row (None when some value is not a string)."""
        if self.values is None:
            return self.rows["v"]
        objs = self.objects()
        if all(isinstance(v, str) or v is None for v in objs):
            return pl.Series("v", objs, dtype=pl.String)
        return None

    def objects(self) -> list[Any]:
        """The Python value of every row."""
        if self.values is None:
            return self.rows["v"].to_list()
        vals, o = self.values, self.rows["o"]
        if len(o) == len(vals) and o.equals(pl.arange(0, len(o), eager=True), check_names=False):
            return list(vals)
        return [vals[i] for i in o.to_list()]

    def to_py(self) -> list[Any]:
        """lm-eval's form: one list per Instance (in position order), or one value each when not nested."""
        rows = self.rows.sort(["_r", "_p"])
        objs = Responses(self.n, rows, self.values).objects()
        if rows.height == self.n and rows["_r"].equals(pl.arange(0, self.n, eager=True), check_names=False):
            return [[v] for v in objs] if self.nested else objs  # one value per Instance
        out: list[Any] = [[] for _ in range(self.n)]
        if self.nested:
            for r, v in zip(rows["_r"].to_list(), objs, strict=True):
                out[r].append(v)
        else:
            for r, v in zip(rows["_r"].to_list(), objs, strict=True):
                out[r] = v
        return out

    # -- changing ---------------------------------------------------------------------------------------

    def with_rows(self, rows: pl.DataFrame, nested: bool | None = None) -> Responses:
        """A subset of the rows, in any order."""
        return replace(self, rows=rows, nested=self.nested if nested is None else nested)

    def with_column(self, v: pl.Series) -> Responses:
        """The same rows with new String values."""
        return Responses(self.n, self.rows.select("_r", "_p").with_columns(v.alias("v")), None, self.nested)

    def as_table(self) -> Responses:
        """The values as a table of Python objects that ``o`` indexes, each row's value once for objects
        and each distinct string once for strings (so a rule written in Python runs once per string)."""
        if self.values is not None:
            objs = self.objects()
            o = pl.Series("o", range(len(objs)), dtype=pl.Int64)
            return Responses(self.n, self.rows.select("_r", "_p").with_columns(o), objs, self.nested)
        v = self.rows["v"]
        uniq = v.drop_nulls().unique(maintain_order=True)
        codes = (
            v.replace_strict(uniq, pl.arange(0, len(uniq), eager=True), return_dtype=pl.Int64)
            if len(uniq)
            else pl.Series([None] * len(v), dtype=pl.Int64)
        )
        table: list[Any] = uniq.to_list()
        if v.null_count():
            codes = codes.fill_null(len(table))
            table.append(None)
        return Responses(self.n, self.rows.select("_r", "_p").with_columns(codes.alias("o")), table, self.nested)

    def with_table(self, values: list[Any]) -> Responses:
        """``as_table``'s rows with a new table (strings only: back to a String column)."""
        assert self.values is not None and len(values) == len(self.values)
        if all(isinstance(v, str) or v is None for v in values):
            v = pl.Series(values, dtype=pl.String).gather(self.rows["o"])
            return Responses(self.n, self.rows.select("_r", "_p").with_columns(v.alias("v")), None, self.nested)
        return replace(self, values=values)

    def as_lists(self) -> Responses:
        """Each Instance as a list: a value that is not one is iterated (a string gives its characters),
        as lm-eval's filters do when they loop over an Instance."""
        if self.nested:
            return self
        return Responses.from_py([list(x) for x in self.to_py()])
