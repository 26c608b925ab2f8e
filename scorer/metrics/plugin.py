"""A metric registered from outside the built-ins (a plugin, a test): checked when it registers, and its code
guarded when it runs.

Registering (``plugin_problem``): its name and every result key it declares (``extra_keys``, ``key_prefix``)
must be names results can carry (``plans.name_problem``: no comma, no ``_stderr``, ...) and must not be, or
begin with, a key another registered metric produces; a default aggregation named must be known.

Running (``guarded``): its per-document values may carry only its own keys (its name, ``extra_keys``, keys
beginning with its ``key_prefix``), so a plugin can never write over another metric's value in the same
document: a key of another's is refused, not dropped (a dropped key would hide the plugin's mistake). An
exception its code raises, or an integer no float holds (aggregations and samples.parquet compute in floats),
is one line (``ScoreError``) naming the metric, not a traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lmeval.plans import aggregation_names, name_problem
from lmeval.scorer.errors import ScoreError

if TYPE_CHECKING:  # the registry imports this module
    from lmeval.scorer.metrics.registry import Metric

# the fields of a Metric holding its code: per-document functions (their values checked), the others
_PER_DOC = ("generate", "choices", "loglikelihood", "rolling", "generate_several")
_VECTOR = ("vector", "choices_vector")
_OTHER = ("compared", "check_options", "task_options")


def own_keys(m: Metric) -> tuple[str, ...]:
    """The result keys ``m`` declares: its name and its ``extra_keys``."""
    return (m.name, *(k for k, _, _ in m.extra_keys))


def _owner(key: str, others: Iterable[Metric]) -> Metric | None:
    """The metric of ``others`` that produces result key ``key`` (or whose key prefix it begins with)."""
    return next((m for m in others if key in own_keys(m) or (m.key_prefix and key.startswith(m.key_prefix))), None)


def plugin_problem(m: Metric, others: Iterable[Metric]) -> str | None:
    """Why registering ``m`` beside ``others`` (the registered metrics) is refused, or None."""
    others = list(others)
    named = [("name", m.name)] + [("extra key", k) for k, _, _ in m.extra_keys]
    for what, key in named + ([("key_prefix", m.key_prefix)] if m.key_prefix is not None else []):
        problem = name_problem(key)
        if problem is not None:
            return f"{what} {key!r} {problem}"
    for what, key in named:
        owner = _owner(key, others)
        if owner is not None:
            return f"{what} {key!r} is a result key of metric {owner.name!r}"
    if m.key_prefix is not None:
        taken = next((k for o in others for k in own_keys(o) if k.startswith(m.key_prefix)), None)
        if taken is not None:
            return f"key_prefix {m.key_prefix!r} covers {taken!r}, a result key of another metric"
    aggs = [m.aggregation] + [a for _, a, _ in m.extra_keys]
    unknown = next((a for a in aggs if isinstance(a, str) and a not in aggregation_names()), None)
    if unknown is not None:
        return (
            f"unknown aggregation {unknown!r} (register_aggregation it first; known: {', '.join(aggregation_names())})"
        )
    bad = next((a for a in aggs if not isinstance(a, str) and not callable(a)), None)
    if bad is not None:
        return f"aggregation {bad!r} is neither a name nor a function"
    return None


def guarded(m: Metric) -> Metric:
    """``m`` with every function of its code wrapped: an exception becomes a one-line ``ScoreError`` naming the
    metric, and per-document values are checked (own keys only, numbers a float holds)."""
    keys = own_keys(m)

    def check(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k not in keys and not (m.key_prefix and isinstance(k, str) and k.startswith(m.key_prefix)):
                    raise ScoreError(f"metric {m.name!r} returned key {k!r}, not one of its own "
                                     f"({', '.join(keys)}; declare others in extra_keys)")  # fmt: skip
                _check_number(m.name, v)
        else:
            _check_number(m.name, value)

    def checked_list(value: Any) -> None:
        if isinstance(value, list):
            for v in value:
                _check_number(m.name, v)

    fields: dict[str, Any] = {}
    for group, after in ((_PER_DOC, check), (_VECTOR, checked_list), (_OTHER, None)):
        for name in group:
            fn = getattr(m, name)
            if fn is not None:
                fields[name] = guarded_call(f"metric {m.name!r}", name, fn, after)
    return dataclasses.replace(m, **fields)


def _check_number(metric: str, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            digits = int(value.bit_length() * 0.30103) + 1
            raise ScoreError(
                f"metric {metric!r} returned an integer too large for a float (about {digits} digits)"
            ) from None


def guarded_call(
    label: str, what: str, fn: Callable[..., Any], after: Callable[[Any], None] | None = None
) -> Callable[..., Any]:
    """``fn`` (a plugin's ``what``: its per-document function, its aggregation...) whose exceptions become one
    ``ScoreError`` line naming ``label`` (``metric 'x'``); ``after`` checks what it returns."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            value = fn(*args, **kwargs)
        except ScoreError:
            raise
        except Exception as e:  # the plugin's code: any failure of it is its own, said in one line
            text = " ".join(str(e).split())[:300]
            raise ScoreError(f"{label} failed ({what}: {type(e).__name__}: {text})") from None
        if after is not None:
            after(value)
        return value

    return call
