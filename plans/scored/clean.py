"""results.json's optional ``contamination`` field (design note: ``plans/scored/SCORED.md``): a run scored with
``lmeval score --exclude REPORT`` keeps the clean-subset score in ``results`` (as before) and, here, the
score on all documents, so ``lmeval score`` and ``lmeval report`` show both side by side.

``{"version": 1, "report": REPORT_DIR, "excluded": {task: [doc ids]}, "all": {task or group: metric map}}``;
``all`` has ``results``' shape (``alias``, ``name``, ``sample_len``, ``"metric,filter"`` values and stderrs).
``side_by_side`` is the one reading of the pair: per task or group and metric, all, clean, excluded, Δ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CONTAMINATION_VERSION = 1
_SKIP = ("alias", "name", "sample_len", "sample_count")


@dataclass
class Contamination:
    """``contamination``: present only in runs scored with ``--exclude``."""

    report: str
    """The contamination report folder given to ``--exclude`` (provenance; may no longer exist)."""
    excluded: dict[str, list[int]] = field(default_factory=dict)
    """Task -> the doc ids left out of ``results`` (sorted; tasks with none are omitted)."""
    all: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Task or group -> its metric map scored on all documents (the shape of ``results``)."""
    version: int = CONTAMINATION_VERSION
    """The field's own version; a reader refuses another."""

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "report": self.report, "excluded": self.excluded, "all": self.all}


@dataclass
class CleanRow:
    """One line of the side-by-side table."""

    task: str
    metric: str
    filter: str
    all: Any  # the value on all documents (a number, "N/A" or None)
    clean: Any  # the value on the clean subset
    n_all: int | None  # documents scored (``sample_len``)
    n_clean: int | None
    excluded: int | None  # n_all - n_clean: documents the clean score leaves out
    delta: float | None  # clean - all, when both are numbers


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _count(m: dict[str, Any]) -> int | None:
    v = m.get("sample_len")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def side_by_side(results: dict[str, dict[str, Any]], c: Contamination, order: list[str]) -> list[CleanRow]:
    """Per task or group of ``order`` (then the rest, sorted) and metric: all vs clean (``results``)."""
    names = [t for t in order if t in c.all] + sorted(set(c.all) - set(order))
    out: list[CleanRow] = []
    for task in names:
        every, clean = c.all[task], results.get(task, {})
        n_all, n_clean = _count(every), _count(clean)
        excluded = n_all - n_clean if n_all is not None and n_clean is not None else None
        for key in sorted(k for k in every if "," in k and "_stderr," not in k and k not in _SKIP):
            metric, _, filt = key.partition(",")
            a: Any = every.get(key)
            b: Any = clean.get(key)
            delta = float(b) - float(a) if _num(a) and _num(b) else None
            out.append(CleanRow(task, metric, filt, a, b, n_all, n_clean, excluded, delta))
    return out


def parse_contamination(v: Any, fail: Any) -> Contamination | None:
    """``contamination`` of results.json (None when absent); ``fail(where, what)`` makes the one-line error."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise fail("contamination", "not an object")
    if v.get("version") != CONTAMINATION_VERSION:
        raise fail("contamination.version", f"{str(v.get('version'))[:20]}; this lmeval reads {CONTAMINATION_VERSION}")
    report = v.get("report", "")
    if not isinstance(report, str):
        raise fail("contamination.report", "not a string")
    excluded = v.get("excluded", {})
    if not isinstance(excluded, dict):
        raise fail("contamination.excluded", "not an object")
    for t, ids in excluded.items():
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            raise fail(f"contamination.excluded.{t}", "not a list of doc ids")
    every = v.get("all", {})
    if not isinstance(every, dict) or not all(isinstance(m, dict) for m in every.values()):
        raise fail("contamination.all", "not an object of metric maps")
    for t, m in every.items():
        for key, x in m.items():
            if "," in key and (isinstance(x, bool) or not (isinstance(x, (int, float, str)) or x is None)):
                raise fail(f"contamination.all.{t}.{key}", "not a number")
    return Contamination(report, excluded, every)
