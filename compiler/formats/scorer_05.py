"""lm-eval 0.5's ``scorer:`` task key (issue #55), compiled into the ``filter_list`` / ``metric_list`` lmeval's
scorer already implements (lm-eval 0.4.13's), so a plan holds plain filters and metrics.

lm-eval 0.5 routes every ``filter_list`` pipeline through a scorer: a pipeline's own ``filter`` steps win,
else the scorer's default filter, else none; its metrics are the pipeline's ``metric_list``, else the task's,
else the scorer's default metrics, else the output type's defaults. With no ``filter_list`` there is one
pipeline named ``none``. The scorers (its ``scorers/extraction.py``, their documented defaults):

- ``first_token``: filter ``remove_whitespace``; ``exact_match`` ignoring case and punctuation;
- ``regex``: filter ``regex`` (its default pattern); the same metric;
- ``choice_match``: no filter; the same metric.

``scorer:`` is a name or ``{type: NAME, kwargs: {}}``; scorers that call a model or run code (``ai_judge``,
``code_exec``) and scorer kwargs are refused in one line. Each pipeline ends in ``take_first`` (lm-eval 0.5
scores the first of a document's repeats per pipeline; ``scores_per_repeat`` in its sample logs keeps all).
"""

from __future__ import annotations

import copy
from typing import Any

from lmeval.compiler.errors import fail

_EXACT_MATCH = {
    "metric": "exact_match",
    "aggregation": "mean",
    "higher_is_better": True,
    "ignore_case": True,
    "ignore_punctuation": True,
}
# scorer name -> (default filter steps, default metrics), as lm-eval 0.4.13-style YAML entries
SCORERS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "first_token": ([{"function": "remove_whitespace"}], [_EXACT_MATCH]),
    "regex": ([{"function": "regex"}], [_EXACT_MATCH]),
    "choice_match": ([], [_EXACT_MATCH]),
}
_TERMINAL = ("take_first", "majority_vote")


def scorer_name(raw: Any, source: str | None, task: str) -> str:
    """The scorer a ``scorer:`` value names (one-line error for anything else)."""
    name = raw.get("type") if isinstance(raw, dict) else raw
    if isinstance(raw, dict):
        extra = [k for k in raw if k not in ("type", "kwargs")]
        if extra or raw.get("kwargs"):
            what = f"key {extra[0]!r}" if extra else "kwargs"
            raise fail(f"scorer {what} is not supported (a scorer is a name or {{type: NAME}})", file=source,
                       task=task, field="scorer")  # fmt: skip
    if not isinstance(name, str) or name not in SCORERS:
        raise fail(f"unknown scorer {name!r}; lmeval compiles lm-eval 0.5's {', '.join(SCORERS)}", file=source,
                   task=task, field="scorer")  # fmt: skip
    return name


def with_scorer(cfg: dict[str, Any], source: str | None) -> dict[str, Any]:
    """``cfg`` with its ``scorer:`` compiled into ``filter_list`` and ``metric_list``; unchanged without one."""
    if "scorer" not in cfg:
        return cfg
    task = str(cfg.get("task"))
    out = {k: v for k, v in cfg.items() if k != "scorer"}
    raw = cfg["scorer"]
    if raw is None:
        return out
    name = scorer_name(raw, source, task)
    default_filter, default_metrics = SCORERS[name]
    pipelines = cfg.get("filter_list") or [{"name": "none", "filter": []}]
    task_metrics = cfg.get("metric_list") or []
    metrics: list[dict[str, Any]] | None = None
    filters = []
    for i, pipe in enumerate(pipelines):
        if not isinstance(pipe, dict):
            raise fail("must be a mapping", file=source, task=task, field=f"filter_list[{i}]")
        own = pipe.get("metric_list") or task_metrics or default_metrics
        if metrics is not None and own != metrics:
            raise fail("pipelines with different metric lists are not supported", file=source, task=task,
                       field=f"filter_list[{i}].metric_list")  # fmt: skip
        metrics = own
        steps = copy.deepcopy(pipe.get("filter") or default_filter)
        if not steps or steps[-1].get("function") not in _TERMINAL:
            steps.append({"function": "take_first"})
        filters.append({"name": pipe.get("name", "none"), "filter": steps})
    out["filter_list"] = filters
    out["metric_list"] = copy.deepcopy(metrics)
    return out
