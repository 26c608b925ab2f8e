"""The plan header's compile-time parts: each task's summary and resolved config (scoring hooks as
function references, lm-eval's default metric and filter lists filled in), the groups, and ``extra``
(selection order, aliases, notes, a JSONL spec's bad lines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmeval.compiler.build import BuildOptions, BuiltTask, budgeted
from lmeval.compiler.errors import fail
from lmeval.compiler.tasks import FunctionRef, Selection, TaskConfig, as_data
from lmeval.plans import (
    DEFAULT_METRICS,
    SUBSAMPLE_KEY,
    GroupSummary,
    ModelInfo,
    PlanHeader,
    SampleScoresError,
    TaskSummary,
    check_repeats,
)
from lmeval.plans import SAMPLE_SCORES_KEY as SCORES_KEY


def plain_data(value: Any, ref: Callable[[FunctionRef], Any]) -> Any:
    """A config value as plan data: every ``FunctionRef`` inside it replaced by ``ref(it)``."""
    if isinstance(value, FunctionRef):
        return ref(value)
    if isinstance(value, dict):
        return {str(k): plain_data(v, ref) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(v, ref) for v in value]
    return value


def _data(value: Any, spec: TaskConfig, field: str, with_path: bool) -> Any:
    return plain_data(value, lambda r: as_data(r, with_path=with_path, task=spec.name, field=field))


_SCORE_TIME = ("process_results", "metric_list", "filter_list")


def task_config_data(bt: BuiltTask, run: BuildOptions) -> dict[str, Any]:
    s = bt.config
    cfg: dict[str, Any] = {}
    for k, v in s.raw.items():
        if v is None or k in ("fewshot_config", "generation_kwargs", "metric_list", "filter_list", "sample_scores"):
            continue
        cfg[k] = _data(v, s, k, k in _SCORE_TIME)
    f = s.fewshot
    cfg.update(
        task=s.name,
        output_type=s.output_type,
        description=s.description,
        target_delimiter=s.target_delimiter,
        fewshot_delimiter=s.fewshot_delimiter,
        repeats=s.repeats,
        num_fewshot=bt.num_fewshot,
        fewshot_random_seed=run.fewshot_random_seed,
        metric_list=_data(metric_list(s), s, "metric_list", True),
        filter_list=_data(filter_list(s), s, "filter_list", True),
        multiple_input=bt.multiple_input,
        multiple_target=bt.multiple_target,
        fewshot_config=_data(
            {
                "sampler": f.sampler,
                "split": f.split,
                "samples": f.samples,
                "fewshot_indices": f.fewshot_indices,
                "doc_to_text": f.doc_to_text,
                "doc_to_target": f.doc_to_target,
                "doc_to_choice": f.doc_to_choice,
                "gen_prefix": f.gen_prefix,
                "fewshot_delimiter": f.fewshot_delimiter,
                "target_delimiter": f.target_delimiter,
                "process_docs": f.process_docs,
            },
            s,
            "fewshot_config",
            False,
        ),
    )
    if s.output_type == "generate_until":
        gk = dict(s.generation_kwargs or {})
        gk.update(run.gen_kwargs or {})
        cfg["generation_kwargs"] = budgeted(gk, run)
    scores = sample_scores(s, run)
    if scores is not None:  # absent unless asked for: plans without it keep their hashes
        cfg[SCORES_KEY] = scores
    if bt.subsample is not None:
        cfg[SUBSAMPLE_KEY] = bt.subsample.to_dict()
    return cfg


def sample_scores(s: TaskConfig, run: BuildOptions) -> list[str] | None:
    """The task's ``sample_scores``, else ``run.sample_scores`` for a generation task (``pass@K`` checked
    against the task's repeats)."""
    if s.sample_scores is not None:
        return list(s.sample_scores)
    if run.sample_scores is None or s.output_type != "generate_until":
        return None
    try:
        check_repeats(run.sample_scores, s.repeats, "run.sample_scores")
    except SampleScoresError as e:
        raise fail(str(e).split(": ", 1)[1], file=s.source, task=s.name, field="run.sample_scores") from None
    return list(run.sample_scores)


def metric_list(s: TaskConfig) -> list[dict[str, Any]]:
    if s.metric_list is not None:
        return [dict(m) for m in s.metric_list]
    return [{"metric": m} for m in DEFAULT_METRICS[s.output_type]]


def filter_list(s: TaskConfig) -> list[dict[str, Any]]:
    if s.filter_list is not None:
        return [dict(f) for f in s.filter_list]
    return [{"name": "none", "filter": [{"function": "take_first"}]}]


def task_summary(bt: BuiltTask, run: BuildOptions, fingerprint: str) -> TaskSummary:
    s = bt.config
    return TaskSummary.of_config(  # name, output_type, num_fewshot, metric_list, filter_list from the config
        task_config_data(bt, run),
        n_docs=len(bt.docs),
        n_instances=sum(len(d.requests) for d in bt.docs),
        data_fingerprint=fingerprint,
        version=s.version,
        groups=s.groups,
    )


def plan_header(
    config: dict[str, Any], model: ModelInfo, sel: Selection, tasks: list[TaskSummary], notes: list[str]
) -> PlanHeader:
    """The unsealed header (no hashes yet: ``plans.io.seal`` fills them in)."""
    groups = [
        GroupSummary(name=g.name, subtasks=g.subtasks, aggregate_metric_list=g.aggregate_metric_list, version=g.version)
        for g in sorted(sel.groups, key=lambda g: g.name)
    ]
    extra: dict[str, Any] = {"selected": sel.top}
    if sel.bad_lines:
        extra["spec_bad_lines"] = sel.bad_lines
    aliases = {s.name: s.task_alias for s in sel.tasks if s.task_alias}
    aliases.update({g.name: g.alias for g in sel.groups if g.alias})
    if aliases:
        extra["aliases"] = aliases
    if notes:
        extra["notes"] = notes
    return PlanHeader(
        config=config, model=model, tasks=tasks, groups=groups, lmeval_version=_lmeval_version(), extra=extra
    )


def _lmeval_version() -> str:
    try:
        from importlib.metadata import version

        return version("lmeval")
    except Exception:  # noqa: BLE001
        return "0"
