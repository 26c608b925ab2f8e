"""Names added to the scoring vocabulary at run time: a metric or aggregation registered in the scorer
(``register_metric``, ``register_aggregation``) that the contract does not name is added here, so a compile in
the same process accepts a task naming it; the built-ins (``scoring.py``) cannot be removed.

A registered name must also keep results unambiguous (``name_problem``): results.json's keys are
``"metric,filter"`` and ``"metric_stderr,filter"``, so a metric's name (or a result key it returns) holding a
comma or ``_stderr`` would be read as another key, and one with whitespace or control characters breaks the
one-line messages and tables that show it."""

from __future__ import annotations

from lmeval.plans.errors import RegistrationError
from lmeval.plans.vocab.scoring import (
    ADDED_AGGREGATIONS,
    AGGREGATIONS,
    BUILT_IN_METRICS,
    METRIC_SPECS,
    MetricSpec,
    aggregation_names,
)


def name_problem(name: object, result_key: bool = True) -> str | None:
    """Why ``name`` cannot be a registered name, or None. ``result_key``: it names a result key (a metric's name,
    a key its per-document values carry); otherwise an aggregation's (named in a task's metric_list only)."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name:
        return "is empty"
    if not name.isprintable() or any(c.isspace() for c in name):
        return "holds whitespace or a control character"
    if result_key and "," in name:
        return "holds a comma (result keys are 'metric,filter')"
    if result_key and "_stderr" in name:
        return "holds '_stderr' (the result keys 'metric_stderr,filter' are the stderrs)"
    return None


def check_name(kind: str, name: object, result_key: bool = True) -> None:
    """Refuse (``RegistrationError``) a registration of ``kind`` (``metric``, ``aggregation``, ...) whose name
    ``name_problem`` refuses."""
    problem = name_problem(name, result_key)
    if problem is not None:
        raise RegistrationError(f"{kind} name {name!r} {problem}")


def add_metric_spec(name: str, spec: MetricSpec) -> None:
    """Make metric ``name`` known to the compile checks (a name known already is refused: ValueError)."""
    if name in METRIC_SPECS:
        raise RegistrationError(f"metric {name!r} is known already")
    METRIC_SPECS[name] = spec


def remove_metric_spec(name: str) -> None:
    """Undo ``add_metric_spec`` (a built-in metric is refused: ValueError)."""
    if name in BUILT_IN_METRICS:
        raise ValueError(f"metric {name!r} is built in")
    METRIC_SPECS.pop(name, None)


def add_aggregation_name(name: str) -> None:
    """Make aggregation ``name`` known to the compile checks (a name known already is refused: ValueError)."""
    if name in aggregation_names():
        raise RegistrationError(f"aggregation {name!r} is known already")
    ADDED_AGGREGATIONS.append(name)


def remove_aggregation_name(name: str) -> None:
    """Undo ``add_aggregation_name`` (lm-eval's own aggregations are refused: ValueError)."""
    if name in AGGREGATIONS:
        raise ValueError(f"aggregation {name!r} is lm-eval's own")
    if name in ADDED_AGGREGATIONS:
        ADDED_AGGREGATIONS.remove(name)
