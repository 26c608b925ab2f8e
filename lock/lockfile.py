"""The release lock: the task hash and Instance count of every shipped task config, compiled at fixed settings.

``lock/lock.json`` is checked in (and ships in the package as ``lmeval/lock/lock.json``). A commit that changes
it changes prompts (or scoring) and must explain the change in CHANGELOG.md. Compiling the shipped configs is
``lock/build.py``'s job; this module only turns compiled plan headers into lock entries, reads and writes the
file, compares and explains what moved. Each entry keeps the task's resolved config, so a moved hash is
explained key by key even for tasks whose data is not at hand; the embedded ``arith`` task also has its full
plan under ``lock/reference/`` for a prompt-by-prompt diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.common import json_text, write_atomic
from lmeval.diff import Change, change_line, dict_changes
from lmeval.plans import VERSION, PlanHeader, TaskSummary, UserError, content_hash

LOCK_FORMAT = "lmeval-lock"
LOCK_VERSION = 1
LOCK_PATH = Path(__file__).resolve().parent / "lock.json"
REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
REFERENCE_TASK = "arith"  # the embedded task, whose whole plan is kept for diffs without data


def task_entry(config_name: str, t: TaskSummary) -> dict[str, Any]:
    return {
        "config": config_name,
        "task_hash": t.task_hash,
        "n_docs": t.n_docs,
        "n_instances": t.n_instances,
        "data_fingerprint": t.data_fingerprint,
        "summary": {
            "output_type": t.output_type,
            "num_fewshot": t.num_fewshot,
            "version": t.version,
            "metric_list": t.metric_list,
            "filter_list": t.filter_list,
            "groups": t.groups,
            "config": t.config,
        },
    }


def entries_from_header(config_name: str, header: PlanHeader) -> tuple[dict[str, Any], dict[str, Any]]:
    """Lock entries (tasks, groups) of one compiled task config."""
    tasks = {t.name: task_entry(config_name, t) for t in header.tasks}
    groups = {
        g.name: {"config": config_name, "hash": content_hash(g.to_dict()), "summary": g.to_dict()}
        for g in header.groups
    }
    return tasks, groups


@dataclass
class Lock:
    settings: dict[str, Any]
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # config name → overrides, tasks, groups
    skipped: dict[str, str] = field(default_factory=dict)  # config name → why it is not compiled
    reference: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None  # the file it was read from (not part of its content)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": LOCK_FORMAT,
            "version": LOCK_VERSION,
            "plan_format_version": VERSION,
            "settings": self.settings,
            "configs": dict(sorted(self.configs.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "reference": self.reference,
            "groups": dict(sorted(self.groups.items())),
            "tasks": dict(sorted(self.tasks.items())),
        }


def load_lock(path: str | os.PathLike[str] = LOCK_PATH) -> Lock:
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: no lock file (create it with `lmeval lock --update`)") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{p}: cannot read the lock ({e})") from None
    if not isinstance(d, dict) or d.get("format") != LOCK_FORMAT:
        raise UserError(f"{p}: not an lmeval lock file (no '{LOCK_FORMAT}' format)")
    if d.get("version") != LOCK_VERSION:
        raise UserError(f"{p}: lock version {d.get('version')!r}, this lmeval reads {LOCK_VERSION}")
    return Lock(
        settings=d.get("settings", {}),
        tasks=d.get("tasks", {}),
        groups=d.get("groups", {}),
        configs=d.get("configs", {}),
        skipped=d.get("skipped", {}),
        reference=d.get("reference", {}),
        path=p,
    )


def write_lock(lock: Lock, path: str | os.PathLike[str] = LOCK_PATH) -> Path:
    """Write atomically (``common.atomic``); one entry per line block, so diffs review well."""
    text = json_text(lock.to_dict(), indent=1, sort_keys=False) + "\n"
    return write_atomic(path, lambda f: f.write(text.encode("utf-8")))


@dataclass
class Moved:
    """One lock entry that no longer matches what the configs compile to."""

    name: str
    kind: str  # task | group
    status: str  # moved | added | removed
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    changes: list[Change] = field(default_factory=list)

    def lines(self) -> list[str]:
        o, n = self.old or {}, self.new or {}
        if self.status == "added":
            return [f"{self.kind} {self.name}: new, not in the lock ({n.get('n_instances', '-')} instances)"]
        if self.status == "removed":
            return [f"{self.kind} {self.name}: in the lock, no longer compiled"]
        if self.kind == "group":
            head = f"group {self.name}: hash {o.get('hash', '')[:12]} → {n.get('hash', '')[:12]}"
        else:
            head = (
                f"task {self.name}: task hash {o.get('task_hash', '')[:12]} → {n.get('task_hash', '')[:12]}, "
                f"docs {o.get('n_docs')} → {n.get('n_docs')}, instances {o.get('n_instances')} → {n.get('n_instances')}"
            )
        out = [head]
        out += [f"    {change_line(c)}" for c in self.changes[:8]]
        if len(self.changes) > 8:
            out.append(f"    … {len(self.changes) - 8} more config changes")
        if self.kind == "task" and not self.changes:
            if o.get("data_fingerprint") != n.get("data_fingerprint"):
                out.append("    the data changed (data fingerprint moved); the task config did not")
            else:
                out.append("    same task config and data: the compiler renders these prompts differently now")
        return out


@dataclass
class LockCheck:
    moved: list[Moved]
    settings_changes: list[Change]
    n_tasks: int
    n_groups: int
    reference_diff: str | None = None  # text of `lmeval diff` against the reference plan, when it moved
    lock_path: Path | None = None  # the lock file compared with, named in the summary

    @property
    def ok(self) -> bool:
        return not self.moved and not self.settings_changes

    def summary(self, advice: bool = True) -> str:
        """The result as text: one line when ok, else what moved and why (``advice``: and what to do)."""
        lock = shown_path(self.lock_path) if self.lock_path is not None else "the lock"
        if self.ok:
            return f"lock ok: {self.n_tasks} task hashes and {self.n_groups} groups match {lock}"
        tasks = [m for m in self.moved if m.kind == "task"]
        out = [
            f"lock check failed: {len(tasks)} of {self.n_tasks} task hashes moved"
            + (f", {len(self.moved) - len(tasks)} groups" if len(self.moved) > len(tasks) else "")
            + (", lock settings differ" if self.settings_changes else "")
        ]
        out += [f"  settings: {change_line(c)}" for c in self.settings_changes]
        for m in self.moved:
            out += ["  " + x for x in m.lines()]
        if self.reference_diff:
            out += [
                "",
                f"lmeval diff against the reference plan of the embedded {REFERENCE_TASK!r} task:",
                self.reference_diff,
            ]
        if advice:
            out += [
                "",
                f"If these prompt changes are intended: run `lmeval lock --update`, commit {lock} with them "
                "and explain each change in CHANGELOG.md.",
            ]
        return "\n".join(out)


def compare_locks(lock: Lock, new: Lock) -> LockCheck:
    """What moved between the checked-in lock and freshly compiled entries (same settings expected)."""
    moved: list[Moved] = []
    for kind, old_d, new_d, key in (
        ("task", lock.tasks, new.tasks, "task_hash"),
        ("group", lock.groups, new.groups, "hash"),
    ):
        for name in sorted(set(old_d) | set(new_d)):
            o, n = old_d.get(name), new_d.get(name)
            if o is None:
                moved.append(Moved(name, kind, "added", None, n))
            elif n is None:
                moved.append(Moved(name, kind, "removed", o, None))
            elif o.get(key) != n.get(key) or o.get("n_instances") != n.get("n_instances"):
                moved.append(Moved(name, kind, "moved", o, n, dict_changes(o.get("summary"), n.get("summary"))))
    ignore = {"data_dir"}
    settings = dict_changes(
        {k: v for k, v in lock.settings.items() if k not in ignore},
        {k: v for k, v in new.settings.items() if k not in ignore},
    )
    return LockCheck(moved, settings, len(new.tasks), len(new.groups), lock_path=lock.path)


def shown_path(p: Path) -> str:
    """A path as a message shows it: relative to the working folder when it lies below it, else absolute."""
    a = p.absolute()
    try:
        return str(a.relative_to(Path.cwd()))
    except ValueError:
        return str(a)
