"""lm-eval's filter pipelines (``filter_list``), applied to every Instance's responses of a task.

A pipeline is a list of steps ``{"function": name, **kwargs}``. Steps run in order over the responses of
all Instances. Common pipelines of generate_until tasks (regex / case / whitespace / map steps, then
take_first, take_first_k or majority_vote) stay in polars; any other step switches to a Python loop with
lm-eval's exact semantics for the rest of the pipeline.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from lmeval.scorer import pyref, pyregex
from lmeval.scorer.errors import ScoreError

BUILTIN_FILTERS = (
    "regex",
    "take_first",
    "take_first_k",
    "majority_vote",
    "lowercase",
    "uppercase",
    "remove_whitespace",
    "map",
    "multi_choice_regex",
    "custom",
)

DEFAULT_PIPELINE: list[dict[str, Any]] = [{"function": "take_first"}]


@dataclass
class Pipeline:
    name: str
    steps: list[dict[str, Any]]


@dataclass
class FilterOutput:
    """Filtered response of every Instance: a polars String column (``scalar``) or Python objects."""

    scalar: pl.Series | None = None
    py: list[Any] | None = None
    kind: str = "py"  # "scalar": one str per instance; "py": anything lm-eval could produce

    def to_py(self) -> list[Any]:
        if self.py is not None:
            return self.py
        assert self.scalar is not None
        return self.scalar.to_list()


@dataclass
class _State:
    kind: str  # list | scalar | py
    flat: pl.DataFrame | None = None  # list: columns _r, _p, v
    scalar: pl.Series | None = None
    py: list[Any] | None = None
    n: int = 0
    notes: list[str] = field(default_factory=list)


def pipelines_of(filter_list: list[dict[str, Any]] | None, task: str) -> list[Pipeline]:
    """The task's named pipelines (lm-eval's single ``none``/take_first pipeline when none are set)."""
    if not filter_list:
        return [Pipeline("none", list(DEFAULT_PIPELINE))]
    out = []
    for i, fc in enumerate(filter_list):
        name = fc.get("name")
        steps = fc.get("filter")
        if not isinstance(name, str) or not isinstance(steps, list):
            raise ScoreError(f"task {task}: filter_list[{i}] needs 'name' and a 'filter' list")
        for j, st in enumerate(steps):
            fn = st.get("function") if isinstance(st, dict) else None
            if fn not in BUILTIN_FILTERS:
                raise ScoreError(f"task {task}: filter {name!r} step {j}: unknown filter function {fn!r}")
            for key in ("regex_pattern",):
                if key in st:
                    _compile(st[key], task, name, key)
            if fn == "multi_choice_regex":
                for rx in st.get("regexes_to_ignore") or []:
                    _compile(rx, task, name, "regexes_to_ignore")
            if fn == "take_first_k" and "k" not in st:
                raise ScoreError(f"task {task}: filter {name!r} step {j}: take_first_k needs 'k'")
        out.append(Pipeline(name, steps))
    return out


def _compile(pattern: Any, task: str, filt: str, key: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise ScoreError(f"task {task}: filter {filt!r}: {key} must be a string, got {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ScoreError(f"task {task}: filter {filt!r}: invalid regex in {key} {pattern!r}: {e}") from None


def apply_pipeline(
    pipe: Pipeline,
    resps: pl.Series | list[Any],
    docs: Callable[[], list[dict[str, Any]]],
    task: str,
    trust: pyref.Trust | None,
) -> FilterOutput:
    """Run ``pipe`` over the responses of all Instances (``resps``: a List(String) column or Python lists).

    ``docs`` lazily gives each Instance's document (only Python steps need them).
    """
    if isinstance(resps, pl.Series):
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
        st = _State(kind="list", flat=flat, n=n)
    else:
        st = _State(kind="py", py=list(resps), n=len(resps))
    for j, step in enumerate(pipe.steps):
        where = f"task {task}: filter {pipe.name!r} step {j} ({step.get('function')})"
        try:
            st = _step(st, step, docs, where, trust)
        except (IndexError, KeyError, TypeError, ValueError, AssertionError) as e:
            raise ScoreError(f"{where}: {type(e).__name__}: {e}") from None
    if st.kind == "scalar":
        return FilterOutput(scalar=st.scalar, kind="scalar")
    return FilterOutput(py=_to_py(st), kind="py")


def _to_py(st: _State) -> list[Any]:
    if st.kind == "py":
        assert st.py is not None
        return st.py
    if st.kind == "scalar":
        assert st.scalar is not None
        return st.scalar.to_list()
    assert st.flat is not None
    grouped = st.flat.sort(["_r", "_p"]).group_by("_r", maintain_order=True).agg(pl.col("v"))
    out: list[Any] = [[] for _ in range(st.n)]
    for r, vals in zip(grouped["_r"].to_list(), grouped["v"].to_list(), strict=True):
        out[r] = vals
    return out


def _step(
    st: _State, step: dict[str, Any], docs: Callable[[], list[dict[str, Any]]], where: str, trust: pyref.Trust | None
) -> _State:
    fn = step["function"]
    kw = {k: v for k, v in step.items() if k != "function"}
    if st.kind == "list":
        assert st.flat is not None
        flat = st.flat
        if fn == "regex":
            v = pyregex.regex_extract(
                flat["v"],
                kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"),
                int(kw.get("group_select", 0)),
                kw.get("fallback", "[invalid]"),
            )
            return _State("list", flat=flat.with_columns(v=v), n=st.n)
        if fn == "lowercase":
            return _State("list", flat=flat.with_columns(v=pyregex.lower(flat["v"])), n=st.n)
        if fn == "uppercase":
            return _State("list", flat=flat.with_columns(v=pyregex.upper(flat["v"])), n=st.n)
        if fn == "remove_whitespace":
            return _State("list", flat=flat.with_columns(v=pyregex.strip(flat["v"])), n=st.n)
        if fn == "map" and _str_map(kw):
            mapping = kw.get("mapping_dict") or {}
            default = kw.get("default_value")
            v = flat["v"].replace_strict(mapping, default=default, return_dtype=pl.String)
            return _State("list", flat=flat.with_columns(v=v), n=st.n)
        if fn == "take_first":
            firsts = flat.filter(pl.col("_p") == 0)
            if firsts.height != st.n:
                raise IndexError("an instance has no responses")
            return _State("scalar", scalar=firsts.sort("_r")["v"], n=st.n)
        if fn == "take_first_k":
            k = int(kw["k"])
            n0 = flat.filter(pl.col("_r") == 0).height
            if n0 < k:
                raise AssertionError(f"need at least {k} responses per doc to take the first {k}, got {n0}")
            return _State("list", flat=flat.filter(pl.col("_p") < k), n=st.n)
        if fn == "majority_vote":
            counts = flat.group_by(["_r", "v"]).agg(c=pl.len(), first=pl.col("_p").min())
            vote = (
                counts.sort(["_r", "c", "first"], descending=[False, True, False])
                .group_by("_r", maintain_order=True)
                .first()
                .select("_r", pl.lit(0, dtype=pl.Int64).alias("_p"), "v")
            )
            return _State("list", flat=vote.with_columns(pl.col("_p").cast(flat["_p"].dtype)), n=st.n)
    py = _to_py(st)
    return _State("py", py=_py_step(fn, kw, py, docs, where, trust), n=st.n)


def _str_map(kw: dict[str, Any]) -> bool:
    m = kw.get("mapping_dict") or {}
    d = kw.get("default_value")
    return all(isinstance(k, str) and isinstance(v, str) for k, v in m.items()) and (d is None or isinstance(d, str))


def _py_step(
    fn: str,
    kw: dict[str, Any],
    resps: list[Any],
    docs: Callable[[], list[dict[str, Any]]],
    where: str,
    trust: pyref.Trust | None,
) -> list[Any]:
    if fn == "regex":
        rx = re.compile(kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
        gs = int(kw.get("group_select", 0))
        fb = kw.get("fallback", "[invalid]")
        return [[pyregex.py_regex_extract(rx, x, gs, fb) for x in inst] for inst in resps]
    if fn == "take_first":
        return [r[0] for r in resps]
    if fn == "take_first_k":
        k = int(kw["k"])
        if len(resps[0]) < k:
            raise AssertionError(f"need at least {k} responses per doc to take the first {k}, got {len(resps[0])}")
        return [r[:k] for r in resps]
    if fn == "majority_vote":
        return [[Counter(r).most_common(1)[0][0]] for r in resps]
    if fn == "lowercase":
        return [[x.lower() for x in inst] for inst in resps]
    if fn == "uppercase":
        return [[x.upper() for x in inst] for inst in resps]
    if fn == "remove_whitespace":
        return [[x.strip() for x in inst] for inst in resps]
    if fn == "map":
        mapping = kw.get("mapping_dict") or {}
        default = kw.get("default_value")
        return [[mapping.get(x, default) for x in inst] for inst in resps]
    if fn == "multi_choice_regex":
        return _multi_choice_regex(kw, resps, docs())
    if fn == "custom":
        ref = kw.get("filter_fn")
        if not isinstance(ref, dict) or not pyref.is_ref(ref):
            raise ScoreError(f"{where}: custom filter needs filter_fn as a function reference")
        f = pyref.load_ref(ref, trust, where)
        return list(f(resps, docs()))
    raise ScoreError(f"{where}: unknown filter function {fn!r}")


_PUNCT_TABLE: dict[int, None] | None = None


def _punct_table() -> dict[int, None]:
    global _PUNCT_TABLE
    if _PUNCT_TABLE is None:
        _PUNCT_TABLE = dict.fromkeys(i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P"))
    return _PUNCT_TABLE


def _multi_choice_regex(kw: dict[str, Any], resps: list[Any], docs: list[dict[str, Any]]) -> list[Any]:
    rx = re.compile(kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
    gs = int(kw.get("group_select", 0))
    fallback = kw.get("fallback", "[invalid]")
    ignore_case = bool(kw.get("ignore_case", False))
    ignore_punct = bool(kw.get("ignore_punctuation", False))
    to_ignore = kw.get("regexes_to_ignore")

    def find(regex: re.Pattern[str], resp: Any, convert: dict[str, str] | None = None) -> Any:
        convert = convert or {}
        if not isinstance(resp, str):
            resp = ""
        found = regex.findall(resp)
        if found:
            m = found[gs]
            if isinstance(m, tuple):
                nonempty = [g for g in m if g]
                if not nonempty:
                    return ""
                m = nonempty[0]
            m = m.strip()
            if m and m in convert:
                m = convert[m]
            return m
        return found

    def ignores(s: str) -> str:
        if to_ignore is not None:
            for p in to_ignore:
                s = re.sub(p, "", s)
        if ignore_case:
            s = s.lower()
        if ignore_punct:
            s = s.translate(_punct_table())
        return s

    out = []
    for r, doc in zip(resps, docs, strict=True):
        alts: list[str] = []
        choice_to_alpha: dict[str, str] = {}
        letters: list[str] = []
        letter_to_target: dict[str, str] = {}
        nxt = "A"
        for c in doc["choices"]:
            m = ignores(c.strip())
            alts.append(re.escape(m))
            choice_to_alpha[m] = f"({nxt})"
            letters.append(nxt)
            letter_to_target[nxt] = f"({nxt})"
            nxt = chr(ord(nxt) + 1)
        fb_rx = re.compile("|".join(sorted(alts, key=len, reverse=True)))
        letter_rx = re.compile(rf":[\s]*({'|'.join(letters)})")
        filtered = []
        for resp in r:
            match = find(rx, resp)
            if not match:
                match = find(fb_rx, ignores(resp), choice_to_alpha)
                if not match:
                    match = find(letter_rx, resp, letter_to_target)
            if not match:
                match = fallback
            filtered.append(match)
        out.append(filtered)
    return out
