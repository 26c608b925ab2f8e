"""Config differences and their causes: two values compared as dotted key paths (``a.b[2].c``), and each path
classified by the config key it names (few-shot selection, template, delimiters, scoring, ...)."""

from __future__ import annotations

import re
from typing import Any

from lmeval.diff.model import Change
from lmeval.plans import TaskSummary

# Config key (any segment of a dotted path, last one first) → cause.
_KEY_CAUSES: dict[str, str] = {
    "format": "format",
    "description": "description",
    "system_instruction": "system_instruction",
    "target_delimiter": "delimiters",
    "fewshot_delimiter": "delimiters",
    "doc_to_text": "template",
    "doc_to_target": "template",
    "doc_to_choice": "template",
    "gen_prefix": "template",
    "process_docs": "template",
    "use_prompt": "template",
    "num_fewshot": "fewshot",
    "fewshot_config": "fewshot",
    "fewshot_random_seed": "fewshot",
    "fewshot_split": "fewshot",
    "fewshot_seed": "fewshot",
    "apply_chat_template": "chat_template",
    "fewshot_as_multiturn": "chat_template",
    "chat_template": "chat_template",
    "chat_template_hash": "chat_template",
    "chat_template_kwargs": "chat_template",
    "generation_kwargs": "generation_kwargs",
    "repeats": "generation_kwargs",
    "metric_list": "scoring",
    "filter_list": "scoring",
    "aggregate_metric_list": "scoring",
    "aggregation": "scoring",
    "higher_is_better": "scoring",
    "weight_by_size": "scoring",
    "process_results": "scoring",
    "groups": "scoring",
    "metric": "scoring",
    "dataset_path": "data",
    "dataset_name": "data",
    "dataset_kwargs": "data",
    "test_split": "data",
    "validation_split": "data",
    "training_split": "data",
    "data_dir": "data",
    "data_fingerprint": "data",
    "limit": "data",
    "output_type": "request_type",
    "tokenizer": "token_ids",
    "tokenizer_hash": "token_ids",
    "doc_to_tools": "tools",
    "tool_parser": "scoring",
}
# Whole paths with a cause of their own: the global generators' seeding changes what a task's own Python
# functions draw (gpqa's process_docs shuffle), i.e. the processed documents (compiler/seeds.py).
# ``run.reasoning`` (plans/vocab/reasoning.py) splits responses at score time: scoring only, at any depth.
_PATH_CAUSES: dict[str, str] = {"run.seed": "doc", "run.seed_mode": "doc", "run.reasoning": "scoring"}
_SEG = re.compile(r"[.\[\]]+")


def cause_of_path(path: str) -> str:
    if path in _PATH_CAUSES:
        return _PATH_CAUSES[path]
    if path.startswith("run.reasoning.") or path.startswith("run.reasoning["):
        return "scoring"
    for seg in reversed([s for s in _SEG.split(path) if s]):
        if seg in _KEY_CAUSES:
            return _KEY_CAUSES[seg]
    return "config"


def same_value(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def dict_changes(old: Any, new: Any, prefix: str = "") -> list[Change]:
    """Differences between two config values as dotted key paths (``a.b[2].c``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[Change] = []
        for k in sorted(set(old) | set(new), key=str):
            p = f"{prefix}.{k}" if prefix else str(k)
            if k not in old:
                out.append(Change(p, None, new[k], "added"))
            elif k not in new:
                out.append(Change(p, old[k], None, "removed"))
            else:
                out.extend(dict_changes(old[k], new[k], p))
        return out
    if (
        isinstance(old, list)
        and isinstance(new, list)
        and len(old) == len(new)
        and any(isinstance(x, dict | list) for x in old + new)
    ):
        return [c for i, (a, b) in enumerate(zip(old, new, strict=True)) for c in dict_changes(a, b, f"{prefix}[{i}]")]
    if old == new and same_value(old, new) or (isinstance(old, list) and old == new):
        return []
    return [Change(prefix or "$", old, new)]


def summary_changes(old: TaskSummary, new: TaskSummary) -> list[Change]:
    skip = {"name", "task_hash", "n_docs", "n_instances", "config"}
    od, nd = old.to_dict(), new.to_dict()
    out = dict_changes({k: v for k, v in od.items() if k not in skip}, {k: v for k, v in nd.items() if k not in skip})
    return out + dict_changes(old.config, new.config, "config")


def group_by_cause(changes: list[Change]) -> dict[str, list[Change]]:
    out: dict[str, list[Change]] = {}
    for c in changes:
        out.setdefault(cause_of_path(c.path), []).append(c)
    return out
