"""A task config in another prompt format: the same documents, few-shot examples and seeds, other prompts.

``formatted(cfg, fmt, labels)`` takes a multiple-choice task's merged config (a dict, as read from its YAML)
and gives the config of ``NAME@FMT``: a task of its own (its name carries the format, so one plan can hold
several formats of one task), whose ``format`` field records what was applied and whose ``doc_to_text``,
``doc_to_choice``, ``doc_to_target``, output type, metrics and filters are plain Jinja and YAML, so the plan,
``lmeval show`` and ``lmeval diff`` show every character of the format. What each format writes is its
adapter's (``olmes.OlmesFormat``, looked up by name in ``registry``); this module holds what they share.
"""

from __future__ import annotations

import copy
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.formats.adapters import adapter_for
from lmeval.compiler.formats.olmes import OlmesFormat, olmes_format
from lmeval.compiler.formats.templates import DEFAULT_LABELS, label_style
from lmeval.plans import OLMES, Variant, format_name, format_names, prompt_format

RECORD = "format"  # the task config key holding the compile's record of the prompt format it applied


def refuse_format_record(cfg: dict[str, Any], source: str | None, default_name: str | None) -> None:
    """A task YAML may not write the format record itself: ``format`` is what the compile records of the format
    it applied (``formatted``, ``formatted05``), and the scorer, ``lmeval diff`` and the report trust it, so a
    YAML's own would make the plan claim a format it never applied."""
    if RECORD in cfg:
        raise fail(
            "is the record lmeval writes of the prompt format it applied; a task YAML cannot set it (a format is "
            "applied by NAME@FORMAT, run.format or lm-eval 0.5's formats:)",
            file=source,
            task=str(cfg.get("task", default_name)),
            field=RECORD,
        )


def check_format(fmt: str, where: str) -> str:
    if olmes_format(fmt) is None:
        raise fail(f"unknown prompt format {fmt!r}; expected one of {', '.join(format_names(OLMES))}", field=where)
    return fmt


def _olmes(fmt: str) -> OlmesFormat:
    adapter = olmes_format(check_format(fmt, "format"))
    assert adapter is not None
    return adapter


def primary_metric(fmt: str) -> tuple[str, str]:
    """(metric, filter) a group of formatted tasks aggregates: ``acc`` for cf/mcf, the extracted label for gen."""
    contract = prompt_format(fmt)
    return ("acc", "none") if contract is None else (contract.metric, contract.filter)


def format_metric(fmt: str, cf_metric: str) -> str:
    """The ``METRIC,FILTER`` key a format is compared on (OLMES): the task's cloze normalisation for cf, the
    label's accuracy for mcf, the extracted label's exact match for gen."""
    contract = prompt_format(fmt)
    metric, filt = (cf_metric, "none") if contract is not None and not contract.labelled else primary_metric(fmt)
    return f"{metric},{filt}"


def group_aggregates(fmt: str, aggregate: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A group's ``aggregate_metric_list`` once its members are in format ``fmt`` (``OlmesFormat``'s rule)."""
    return _olmes(fmt).group_aggregates(aggregate)


def formatted(
    cfg: dict[str, Any], fmt: str, source: str | None, labels: str = DEFAULT_LABELS, seed: int | None = None
) -> dict[str, Any]:
    """The config of task ``cfg['task']`` in format ``fmt`` (an OLMES-style format of the lookup), its labels
    in style ``labels`` and, when ``seed`` is given, its few-shot examples drawn with that seed instead of the
    run's (a sweep's variant: ``arc_easy@mcf+parens+seed1``, plans/vocab/promptformats.py)."""
    base = str(cfg.get("task"))
    adapter = _olmes(fmt)
    if cfg.get("output_type") != "multiple_choice":
        raise fail(
            f"prompt format {fmt!r} applies to multiple_choice tasks (this one is {cfg.get('output_type')!r})",
            file=source,
            task=base,
            field="output_type",
        )
    ad = adapter_for(cfg, base, source)
    style = label_style(labels, f"task {base} format labels")
    labelled = adapter.contract.labelled
    if not labelled and style.name != DEFAULT_LABELS:
        raise fail(f"the cloze format has no labels (got {labels!r})", file=source, task=base, field="format labels")
    suffix = Variant(fmt, None if style.name == DEFAULT_LABELS else style.name, seed).suffix()
    out = copy.deepcopy(cfg)
    out["task"] = format_name(base, suffix)
    alias = cfg.get("task_alias")
    out["task_alias"] = format_name(alias if isinstance(alias, str) and alias else base, suffix)
    record: dict[str, Any] = {"name": fmt, "task": base, "adapter": ad.to_dict()}
    if labelled:
        record["labels"] = style.name
    if seed is not None:
        record["seed"] = seed  # the few-shot sampler's seed (compiler/build/builder.py)
    record["metric"] = format_metric(fmt, ad.cf_metric)
    out["format"] = record
    adapter.render(cfg, out, ad, style)
    return out
