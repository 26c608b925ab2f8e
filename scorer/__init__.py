"""Scorer: results Parquet + plan -> lm-eval-compatible metrics, stderr and group aggregates (polars).

Its face: ``score`` (and ``ScoreError``, its one error), ``check_user_code`` (the consent to run a task's code)
and the paired statistics other tools build on (``paired_test``, ``mde``, ``Z_ALPHA``; ``lmeval.diff.runs``
compares two scored runs with them); the metric and aggregation registries (``register_metric``,
``register_aggregation``: a new metric or aggregation is one registration)."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lmeval.scorer.errors import ScoreError
from lmeval.scorer.metrics import (
    AGGREGATION_REGISTRY,
    METRICS,
    Aggregation,
    ChoiceArrays,
    ChoiceDoc,
    Metric,
    metric_of_key,
    metrics_for,
    register_aggregation,
    register_metric,
)
from lmeval.scorer.power import Z_ALPHA, mde, paired_test
from lmeval.scorer.score import ScoreOutcome, score, score_run
from lmeval.scorer.usercode import check_user_code

if TYPE_CHECKING:
    from lmeval.scorer.groups import leaf_tasks
    from lmeval.scorer.judgegrades import judge_grades
    from lmeval.scorer.power import plan_power
    from lmeval.scorer.trajectories import step_scores, trajectory_scores


__all__ = [
    "AGGREGATION_REGISTRY",
    "METRICS",
    "Aggregation",
    "ChoiceArrays",
    "ChoiceDoc",
    "Metric",
    "metric_of_key",
    "metrics_for",
    "register_aggregation",
    "register_metric",
    "judge_grades",
    "leaf_tasks",
    "plan_power",
    "ScoreError",
    "ScoreOutcome",
    "Z_ALPHA",
    "check_user_code",
    "mde",
    "paired_test",
    "score",
    "score_run",
    "step_scores",
    "trajectory_scores",
]

# re-exported on first use (PEP 562), so that importing the face stays light: name -> its module
_LAZY = {
    "judge_grades": "lmeval.scorer.judgegrades",
    "leaf_tasks": "lmeval.scorer.groups",
    "plan_power": "lmeval.scorer.power",
    "step_scores": "lmeval.scorer.trajectories",
    "trajectory_scores": "lmeval.scorer.trajectories",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
