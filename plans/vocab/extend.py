"""Names added to the scoring vocabulary at run time: a metric or aggregation registered in the scorer
(``register_metric``, ``register_aggregation``) that the contract does not name is added here, so a compile in
the same process accepts a task naming it; the built-ins (``scoring.py``) cannot be removed."""

from __future__ import annotations

from lmeval.plans.vocab.scoring import (
    ADDED_AGGREGATIONS,
    AGGREGATIONS,
    BUILT_IN_METRICS,
    METRIC_SPECS,
    MetricSpec,
    aggregation_names,
)


def add_metric_spec(name: str, spec: MetricSpec) -> None:
    """Make metric ``name`` known to the compile checks (a name known already is refused: ValueError)."""
    if name in METRIC_SPECS:
        raise ValueError(f"metric {name!r} is known already")
    METRIC_SPECS[name] = spec


def remove_metric_spec(name: str) -> None:
    """Undo ``add_metric_spec`` (a built-in metric is refused: ValueError)."""
    if name in BUILT_IN_METRICS:
        raise ValueError(f"metric {name!r} is built in")
    METRIC_SPECS.pop(name, None)


def add_aggregation_name(name: str) -> None:
    """Make aggregation ``name`` known to the compile checks (a name known already is refused: ValueError)."""
    if name in aggregation_names():
        raise ValueError(f"aggregation {name!r} is known already")
    ADDED_AGGREGATIONS.append(name)


def remove_aggregation_name(name: str) -> None:
    """Undo ``add_aggregation_name`` (lm-eval's own aggregations are refused: ValueError)."""
    if name in AGGREGATIONS:
        raise ValueError(f"aggregation {name!r} is lm-eval's own")
    if name in ADDED_AGGREGATIONS:
        ADDED_AGGREGATIONS.remove(name)
