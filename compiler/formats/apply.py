"""A task config in another prompt format: the same documents, few-shot examples and seeds, other prompts.

``formatted(cfg, fmt, labels)`` takes a multiple-choice task's merged config (a dict, as read from its YAML)
and gives the config of ``NAME@FMT``: a task of its own (its name carries the format, so one plan can hold
several formats of one task), whose ``format`` field records what was applied and whose ``doc_to_text``,
``doc_to_choice``, ``doc_to_target``, output type, metrics and filters are plain Jinja and YAML, so the plan,
``lmeval show`` and ``lmeval diff`` show every character of the format.

- ``cf``: a task written as cloze keeps its own prompts (lm-eval parity of the requests) and is scored with
  every cloze normalisation (``CF_METRICS``); a task written with letters (mmlu) gets OLMES' cloze prompt.
- ``mcf``: OLMES' lettered prompt, scored on the label (``acc``).
- ``gen``: the MCF prompt, a greedy generation, the label extracted by ``GEN_LETTER_REGEX``, exact match.
"""

from __future__ import annotations

import copy
from typing import Any

from lmeval.compiler.errors import fail
from lmeval.compiler.formats.adapters import adapter_for
from lmeval.compiler.formats.templates import (
    DEFAULT_LABELS,
    GEN_FILTER,
    GEN_LETTER_REGEX,
    GEN_MAX_TOKENS,
    GEN_NUMBER_REGEX,
    GEN_UNTIL,
    cf_choices,
    cf_text,
    gold,
    label_style,
    mcf_choices,
    mcf_text,
)
from lmeval.plans import PROMPT_FORMATS, Variant, format_name

# every cloze normalisation (OLMES: none, per character, per token, PMI against "Answer:"; plans/vocab/scoring.py)
CF_METRICS = ("acc", "acc_norm", "acc_per_token", "acc_pmi")
_FEWSHOT_FIELDS = ("doc_to_text", "doc_to_choice", "doc_to_target", "gen_prefix")


def check_format(fmt: str, where: str) -> str:
    if fmt not in PROMPT_FORMATS:
        raise fail(f"unknown prompt format {fmt!r}; expected one of {', '.join(PROMPT_FORMATS)}", field=where)
    return fmt


def primary_metric(fmt: str) -> tuple[str, str]:
    """(metric, filter) a group of formatted tasks aggregates: ``acc`` for cf/mcf, the extracted label for gen."""
    return ("exact_match", GEN_FILTER) if fmt == "gen" else ("acc", "none")


def format_metric(fmt: str, cf_metric: str) -> str:
    """The ``METRIC,FILTER`` key a format is compared on (OLMES): the task's cloze normalisation for cf, the
    label's accuracy for mcf, the extracted label's exact match for gen."""
    metric, filt = (cf_metric, "none") if fmt == "cf" else primary_metric(fmt)
    return f"{metric},{filt}"


def formatted(
    cfg: dict[str, Any], fmt: str, source: str | None, labels: str = DEFAULT_LABELS, seed: int | None = None
) -> dict[str, Any]:
    """The config of task ``cfg['task']`` in format ``fmt`` (one of ``PROMPT_FORMATS``), its MCF labels in style
    ``labels`` and, when ``seed`` is given, its few-shot examples drawn with that seed instead of the run's
    (a sweep's variant: ``arc_easy@mcf+parens+seed1``, plans/vocab/promptformats.py)."""
    base = str(cfg.get("task"))
    if cfg.get("output_type") != "multiple_choice":
        raise fail(
            f"prompt format {fmt!r} applies to multiple_choice tasks (this one is {cfg.get('output_type')!r})",
            file=source,
            task=base,
            field="output_type",
        )
    ad = adapter_for(cfg, base, source)
    style = label_style(labels, f"task {base} format labels")
    if fmt == "cf" and style.name != DEFAULT_LABELS:
        raise fail(f"the cloze format has no labels (got {labels!r})", file=source, task=base, field="format labels")
    suffix = Variant(fmt, None if style.name == DEFAULT_LABELS else style.name, seed).suffix()
    out = copy.deepcopy(cfg)
    out["task"] = format_name(base, suffix)
    alias = cfg.get("task_alias")
    out["task_alias"] = format_name(alias if isinstance(alias, str) and alias else base, suffix)
    record: dict[str, Any] = {"name": fmt, "task": base, "adapter": ad.to_dict()}
    if fmt != "cf":
        record["labels"] = style.name
    if seed is not None:
        record["seed"] = seed  # the few-shot sampler's seed (compiler/build/builder.py)
    record["metric"] = format_metric(fmt, ad.cf_metric)
    out["format"] = record
    if fmt == "cf" and ad.written == "cf":
        out["metric_list"] = _cf_metrics(cfg, ad.partial)
        return out
    fewshot = out.get("fewshot_config")
    if isinstance(fewshot, dict):
        out["fewshot_config"] = {k: v for k, v in fewshot.items() if k not in _FEWSHOT_FIELDS}
    out.pop("gen_prefix", None)
    out["target_delimiter"] = " "
    out["doc_to_target"] = gold(ad.gold)
    if fmt == "cf":
        out["doc_to_text"] = cf_text(ad.prefix, ad.question)
        out["doc_to_choice"] = cf_choices(ad.choices)
        out["metric_list"] = _cf_metrics(cfg, partial=False)
        return out
    out["doc_to_text"] = mcf_text(ad.prefix, ad.question, ad.choices, style)
    out["doc_to_choice"] = mcf_choices(ad.choices, style)
    if fmt == "mcf":
        out["metric_list"] = [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}]
        return out
    out["output_type"] = "generate_until"
    out["generation_kwargs"] = {"until": list(GEN_UNTIL), "max_gen_toks": GEN_MAX_TOKENS, "do_sample": False}
    out["metric_list"] = [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}]
    regex = GEN_NUMBER_REGEX if style.numbers else GEN_LETTER_REGEX
    out["filter_list"] = [
        {
            "name": GEN_FILTER,
            "filter": [{"function": "regex", "regex_pattern": regex, "group_select": 0}, {"function": "take_first"}],
        }
    ]
    return out


def _cf_metrics(cfg: dict[str, Any], partial: bool) -> list[dict[str, Any]]:
    """The task's own metrics, then every cloze normalisation it does not list yet (no PMI for a task scored
    by partial contexts, one per choice: its unconditional continuation would be the same for every choice)."""
    own = [m for m in cfg.get("metric_list") or [] if isinstance(m, dict)]
    names = {m.get("metric") for m in own}
    wanted = [m for m in CF_METRICS if not (partial and m == "acc_pmi")]
    extra = [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in wanted if m not in names]
    return copy.deepcopy(own) + extra
