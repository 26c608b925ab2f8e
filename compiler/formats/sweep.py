"""Sensitivity sweeps (issue #38): ``run.sweep`` lists formats, MCF label styles and few-shot seeds, and
``NAME@sweep`` compiles every combination of them as a task of its own (``arc_easy@mcf+parens+seed1``, the one
naming rule of plans/vocab/promptformats.py) plus a group ``NAME@sweep`` whose scores are their spread
(scorer/groups/spread.py). ``cf`` has no labels, so it varies by seed only: 3 formats x 3 label styles x
3 seeds are 3 + 9 + 9 = 21 tasks. The variant of the default style and the run's seed is the plain
``NAME@FMT`` task, byte for byte; identical requests across variants are executed once (same request hash)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lmeval.common import quoted
from lmeval.compiler.errors import fail
from lmeval.compiler.formats.olmes import olmes_format
from lmeval.compiler.formats.templates import DEFAULT_LABELS, LABEL_STYLES
from lmeval.plans import MAX_SEED, OLMES, PROMPT_FORMATS, Variant, format_names, variant_of

SWEEP_KEYS = ("formats", "labels", "seeds")
MAX_VARIANTS = 256  # a sweep is a handful of prompt variants, not a grid search


@dataclass(frozen=True)
class Sweep:
    """``run.sweep``: the axes (``seeds``: None is the run's few-shot seed)."""

    formats: tuple[str, ...] = PROMPT_FORMATS  # the shipped three (a registered format is swept when listed)
    labels: tuple[str, ...] = (DEFAULT_LABELS,)
    seeds: tuple[int | None, ...] = (None,)

    def variants(self, run_seed: int | None) -> list[Variant]:
        """Every distinct variant, formats first, then label styles, then seeds, in the order listed."""
        out: dict[Variant, None] = {}  # insertion-ordered set: linear in the product, never quadratic
        for fmt in self.formats:
            for labels in self.labels:
                for seed in self.seeds:
                    out.setdefault(variant_of(fmt, labels, run_seed if seed is None else seed, run_seed))
        return list(out)


def parse_sweep(raw: Any) -> Sweep | None:
    """``run.sweep``: None when unset; a mapping of ``formats``, ``labels`` and ``seeds`` (each optional, a
    non-empty list without repeats) else a one-line error naming ``run.sweep.KEY``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise fail(f"must be a mapping of {', '.join(SWEEP_KEYS)}, got {raw!r}", field="run.sweep")
    for key in raw:
        if key not in SWEEP_KEYS:
            raise fail(f"unknown key; expected {', '.join(SWEEP_KEYS)}", field=f"run.sweep.{key}")
    formats = _axis(raw, "formats", PROMPT_FORMATS, lambda v: isinstance(v, str) and olmes_format(v) is not None,
                    _names(format_names(OLMES)))  # fmt: skip
    labels = _axis(raw, "labels", (DEFAULT_LABELS,), lambda v: isinstance(v, str) and v in LABEL_STYLES,
                   _names(tuple(LABEL_STYLES)))  # fmt: skip
    seeds = _axis(raw, "seeds", (None,), _seed_ok, "non-negative integers")  # below 2**64, as a plan holds
    # each axis is at most MAX_VARIANTS long (checked before anything is expanded), so the product expanded here is
    # at most formats x label styles x MAX_VARIANTS, each variant found in a set (linear, never quadratic)
    sweep = Sweep(formats, labels, seeds)
    n = len(sweep.variants(None))
    if n > MAX_VARIANTS:
        raise fail(f"{n} variants per task; at most {MAX_VARIANTS}", field="run.sweep")
    return sweep


def _seed_ok(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_SEED


def _names(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _axis(raw: dict[str, Any], key: str, default: tuple[Any, ...], ok: Any, want: str) -> tuple[Any, ...]:
    if key not in raw:
        return default
    values = raw[key]
    if not isinstance(values, list) or not values:
        raise fail(f"must be a non-empty list, got {quoted(values)}", field=f"run.sweep.{key}")
    if len(values) > MAX_VARIANTS:  # refused before anything is expanded (20,000 seeds: one line at once)
        raise fail(f"lists {len(values)} values; a sweep has at most {MAX_VARIANTS} variants per task",
                   field=f"run.sweep.{key}")  # fmt: skip
    seen: set[Any] = set()
    for v in values:
        if not ok(v):
            raise fail(f"must list only {want}, got {quoted(v)}", field=f"run.sweep.{key}")
        if v in seen:
            raise fail(f"lists {quoted(v)} twice", field=f"run.sweep.{key}")
        seen.add(v)
    return tuple(values)
