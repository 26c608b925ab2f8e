"""lm-eval's filter pipelines (``filter_list``), applied to every Instance's responses of a task.

A pipeline is a list of steps ``{"function": name, **kwargs}``; steps run in order over the responses of
all Instances. ``FILTER_REGISTRY`` maps each filter name (exactly ``plans.scoring.FILTERS``) to its one
implementation, modelled on lm-eval's registry of the same name. Each takes the responses as one polars
frame (``scorer.responses``) and returns a new one: the string filters and the structural ones
(take_first, take_first_k, majority_vote) are vectorised; ``map`` runs its Python rule once per distinct
value; the filters that need documents or user code (multi_choice_regex, custom) loop in Python over
lm-eval's nested lists. Rows polars cannot treat exactly like Python's ``re``/``str`` are redone one by
one by ``scorer.regex_ops``, inside the same function.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from lmeval.scorer import pyref, regex_ops
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.responses import Responses

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


@dataclass(frozen=True)
class Context:
    """What a filter may read besides the responses."""

    docs: Callable[[], list[dict[str, Any]]]  # each Instance's document (loaded on first call)
    where: str  # "task T: filter F step J (name)", for messages
    trust: pyref.Trust | None  # consent to run the task's code (custom filters)


@dataclass(frozen=True)
class Filter:
    """One filter function of ``filter_list`` steps: its name and its one implementation."""

    name: str
    apply: Callable[[Responses, dict[str, Any], Context], Responses]  # (responses, step arguments, context)


FILTER_REGISTRY: dict[str, Filter] = {}  # name -> Filter (lm-eval's FILTER_REGISTRY); = plans.scoring.FILTERS


def register_filter(name: str) -> Callable[[Callable[..., Responses]], Callable[..., Responses]]:
    def add(fn: Callable[[Responses, dict[str, Any], Context], Responses]) -> Callable[..., Responses]:
        if name in FILTER_REGISTRY:
            raise ValueError(f"filter {name!r} is registered twice")
        FILTER_REGISTRY[name] = Filter(name, fn)
        return fn

    return add


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
            if fn not in FILTER_REGISTRY:
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

    ``docs`` lazily gives each Instance's document (only filters that read documents call it).
    """
    st = Responses.from_series(resps) if isinstance(resps, pl.Series) else Responses.from_py(resps)
    for j, step in enumerate(pipe.steps):
        fn = step.get("function")
        where = f"task {task}: filter {pipe.name!r} step {j} ({fn})"
        filt = FILTER_REGISTRY.get(fn) if isinstance(fn, str) else None
        if filt is None:
            raise ScoreError(f"{where}: unknown filter function {fn!r}")
        kw = {k: v for k, v in step.items() if k != "function"}
        try:
            st = filt.apply(st, kw, Context(docs, where, trust))
        except (IndexError, KeyError, TypeError, ValueError, AssertionError, AttributeError) as e:
            raise ScoreError(f"{where}: {type(e).__name__}: {e}") from None
    if st.values is None and not st.nested:
        return FilterOutput(scalar=st.rows.sort("_r")["v"], kind="scalar")
    return FilterOutput(py=st.to_py(), kind="py")


# -- the filters ---------------------------------------------------------------------------------------


def _strings(name: str, st: Responses) -> pl.Series:
    """The String values of every row; a filter that needs strings fails on anything else (lm-eval's
    ``.lower()`` etc. raise AttributeError)."""
    v = st.column()
    if v is None:
        bad = next(x for x in st.objects() if not (isinstance(x, str) or x is None))
        raise TypeError(f"{name} needs string responses, got {type(bad).__name__} {bad!r}")
    return v


@register_filter("regex")
def _regex(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's RegexFilter: the ``group_select``-th match of ``regex_pattern`` (its first non-empty group),
    stripped; ``fallback`` when nothing matches; responses that are not strings count as ""."""
    st = st.as_lists()
    if st.values is not None:  # objects: only strings are searched (the others become "")
        t = st.as_table()
        st = t.with_table([v if isinstance(v, str) else None for v in t.values or []])
    v = regex_ops.regex_extract(
        _strings("regex", st),
        kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"),
        int(kw.get("group_select", 0)),
        kw.get("fallback", "[invalid]"),
    )
    return st.with_column(v)


@register_filter("take_first")
def _take_first(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's TakeFirstFilter: each Instance's first response."""
    st = st.as_lists()
    firsts = st.rows.filter(pl.col("_p") == 0)
    if firsts.height != st.n:
        raise IndexError("an instance has no responses")
    return st.with_rows(firsts.sort("_r"), nested=False)


@register_filter("take_first_k")
def _take_first_k(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's TakeKFilter: each Instance's first ``k`` responses (the first Instance must have k)."""
    k = int(kw["k"])
    if not st.nested:  # lm-eval slices each value: a string gives its first k characters
        py = st.to_py()
        if len(py[0]) < k:
            raise AssertionError(f"need at least {k} responses per doc to take the first {k}, got {len(py[0])}")
        return Responses.from_py([x[:k] for x in py])
    n0 = st.rows.filter(pl.col("_r") == 0).height
    if n0 < k:
        raise AssertionError(f"need at least {k} responses per doc to take the first {k}, got {n0}")
    return st.with_rows(st.rows.filter(pl.col("_p") < k))


@register_filter("majority_vote")
def _majority_vote(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's MajorityVoteFilter: each Instance's most common response (``Counter.most_common``: ties go
    to the one seen first), as a one-element list."""
    st = st.as_lists()
    rows = st.rows
    if st.values is None:
        key = rows["v"]
    else:  # equal objects (Counter's hash and ==) share a key
        ids: dict[Any, int] = {}
        key = pl.Series([ids.setdefault(v, len(ids)) for v in st.objects()], dtype=pl.Int64)
    counts = rows.select("_r", "_p", key.alias("_k")).group_by(["_r", "_k"]).agg(c=pl.len(), _p=pl.col("_p").min())
    winners = (
        counts.sort(["_r", "c", "_p"], descending=[False, True, False])
        .group_by("_r", maintain_order=True)
        .first()
        .select("_r", "_p", "_k")
    )
    if winners.height != st.n:
        raise IndexError("an instance has no responses")  # Counter([]).most_common(1)[0]
    if st.values is None:  # a string is its own key
        vote = winners.rename({"_k": "v"})
    else:  # the Instance's first object of the winning key
        vote = winners.drop("_k").join(rows, on=["_r", "_p"], how="left", maintain_order="left")
    return st.with_rows(vote.with_columns(pl.lit(0, dtype=rows["_p"].dtype).alias("_p")))


def _string_op(name: str, op: Callable[[pl.Series], pl.Series], doc: str) -> None:
    def run(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
        st = st.as_lists()
        return st.with_column(op(_strings(name, st)))

    run.__doc__ = doc
    register_filter(name)(run)


_string_op("lowercase", regex_ops.lower, "lm-eval's LowercaseFilter: ``str.lower`` of every response.")
_string_op("uppercase", regex_ops.upper, "lm-eval's UppercaseFilter: ``str.upper`` of every response.")
_string_op("remove_whitespace", regex_ops.strip, "lm-eval's WhitespaceFilter: ``str.strip`` of every response.")


@register_filter("map")
def _map(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's MapFilter: ``mapping_dict.get(response, default_value)``, once per distinct response."""
    mapping = kw.get("mapping_dict") or {}
    default = kw.get("default_value")
    t = st.as_lists().as_table()
    assert t.values is not None
    return t.with_table([mapping.get(v, default) for v in t.values])


@register_filter("multi_choice_regex")
def _multi_choice(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """lm-eval's MultiChoiceRegexFilter (reads each Instance's document's ``choices``)."""
    return Responses.from_py(_multi_choice_regex(kw, st.to_py(), ctx.docs()))


@register_filter("custom")
def _custom(st: Responses, kw: dict[str, Any], ctx: Context) -> Responses:
    """A user's ``filter_fn(resps, docs) -> resps`` (a function reference; runs only with consent)."""
    ref = kw.get("filter_fn")
    if not isinstance(ref, dict) or not pyref.is_ref(ref):
        raise ScoreError(f"{ctx.where}: custom filter needs filter_fn as a function reference")
    f = pyref.load_ref(ref, ctx.trust, ctx.where)
    return Responses.from_py(list(f(st.to_py(), ctx.docs())))


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
