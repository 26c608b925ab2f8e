"""The result of diffing two plans: plain dataclasses, JSON-ready. A report is data: ``lmeval.diff.render``'s
``render_text`` turns it into text; nothing here imports the renderer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lmeval.common import json_text

# Cause keys (stable: they appear in --json output) and their human labels, in report order.
CAUSES: dict[str, str] = {
    "format": "prompt format (cf / mcf / gen: compiler/formats)",
    "fewshot": "few-shot selection",
    "description": "description",
    "system_instruction": "system instruction",
    "delimiters": "delimiters",
    "template": "prompt template",
    "chat_template": "chat template",
    "doc": "doc text",
    "choices": "continuation/choices",
    "target": "targets",
    "generation_kwargs": "generation kwargs",
    "tools": "tools (function schemas given to the chat template)",
    "token_ids": "token ids only (tokenizer change)",
    "request_type": "request type",
    "data": "dataset",
    "scoring": "metrics/filters/aggregation (scoring only: no re-execution needed)",
    "config": "other task config",
    "prompt": "prompt text (cause not shown in the plan)",
    "images": "images shown (bytes or placement: plans/plan/media.py)",
}


@dataclass
class Change:
    """One differing value at a dotted key path; ``kind`` is changed, added (only in new) or removed."""

    path: str
    old: Any = None
    new: Any = None
    kind: str = "changed"


@dataclass
class CauseStat:
    """How many docs/Instances of a task one cause touched, with the config changes behind it."""

    cause: str
    docs: int = 0
    instances: int = 0
    config: list[Change] = field(default_factory=list)  # config changes classified as this cause
    examples: list[dict[str, Any]] = field(default_factory=list)  # bounded, e.g. few-shot ids old → new

    @property
    def label(self) -> str:
        return CAUSES.get(self.cause, self.cause)


@dataclass
class TaskDiff:
    name: str
    status: str  # changed | added | removed
    old_hash: str | None = None
    new_hash: str | None = None
    old_docs: int = 0
    new_docs: int = 0
    old_instances: int = 0
    new_instances: int = 0
    docs_added: int = 0
    docs_removed: int = 0
    docs_changed: int = 0
    instances_added: int = 0
    instances_removed: int = 0
    instances_changed: int = 0
    to_execute: int = 0  # Instances of the new plan whose request (request_hash) is not in the old one
    records_identical: bool = False  # only the task's summary (config, metrics, filters) differs
    scoring_only: bool = False
    changes: list[Change] = field(default_factory=list)  # task summary/config differences
    causes: list[CauseStat] = field(default_factory=list)

    def cause(self, key: str) -> CauseStat | None:
        for c in self.causes:
            if c.cause == key:
                return c
        return None


@dataclass
class PromptDiff:
    """One changed prompt (Instances of one doc sharing the same change), as a unified diff."""

    task: str
    doc_id: int
    idxs: list[int]
    kind: str  # changed | added | removed | token_ids
    causes: list[str]
    diff: str  # whitespace made visible


@dataclass
class DiffReport:
    old: str
    new: str
    old_plan_hash: str
    new_plan_hash: str
    identical: bool
    n_tasks: tuple[int, int] = (0, 0)
    n_docs: tuple[int, int] = (0, 0)
    n_instances: tuple[int, int] = (0, 0)
    config: list[Change] = field(default_factory=list)  # resolved config (header.config)
    model: list[Change] = field(default_factory=list)  # model/tokenizer/chat-template identity
    meta: list[Change] = field(default_factory=list)  # lmeval version, plan-level extras
    groups: list[Change] = field(default_factory=list)  # group membership and aggregation
    tasks: list[TaskDiff] = field(default_factory=list)  # tasks that differ, new plan order, then removed
    tasks_identical: int = 0
    prompts: list[PromptDiff] = field(default_factory=list)  # the first ``show`` changed prompts
    prompts_total: int = 0
    show: int = 5
    task_filter: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for t, td in zip(self.tasks, d["tasks"], strict=True):
            for c, cd in zip(t.causes, td["causes"], strict=True):
                cd["label"] = c.label
        d["summary"] = self.summary()
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json_text(self.to_dict(), indent=indent, default=str, terminal=True)

    def summary(self) -> str:
        """One line: identical, or what differs."""
        if self.identical:
            return (
                f"identical: {self.n_tasks[1]} tasks, {self.n_docs[1]} docs, {self.n_instances[1]} instances "
                f"(plan {self.new_plan_hash[:12]})"
            )
        parts = []
        if self.config:
            parts.append(f"{len(self.config)} config keys")
        if self.model:
            parts.append("model identity")
        changed = [t for t in self.tasks if t.status == "changed"]
        added = [t for t in self.tasks if t.status == "added"]
        removed = [t for t in self.tasks if t.status == "removed"]
        if changed:
            parts.append(f"{len(changed)} tasks changed")
        if added:
            parts.append(f"{len(added)} added")
        if removed:
            parts.append(f"{len(removed)} removed")
        n_inst = sum(t.instances_changed + t.instances_added + t.instances_removed for t in self.tasks)
        n_exec = sum(t.to_execute for t in self.tasks)
        if self.groups:
            parts.append("groups")
        if self.meta and not parts:
            parts.append("plan metadata")
        return (
            f"differ: {', '.join(parts) or 'plan hash'}; {n_inst} instances changed/added/removed, "
            f"{n_exec} to execute (plan {self.old_plan_hash[:12]} → {self.new_plan_hash[:12]})"
        )
