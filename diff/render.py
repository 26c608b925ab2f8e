"""Text rendering of a ``DiffReport``: whitespace made visible, values shortened, prompts as unified diffs."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from lmeval.diff.model import CAUSES, Change, DiffReport, TaskDiff

_TRAILING_WS = re.compile(r"[ \t]+$")
_INNER_SPACES = re.compile(r"  +")


def visible_line(line: str) -> str:
    """One line of a prompt with invisible characters shown: trailing spaces and inner runs of spaces ␣,
    tabs →, newline ↵, CR ␍, no-break space ⍽ (indentation stays as it is)."""
    nl = line.endswith("\n")
    body = line[:-1] if nl else line
    cr = body.endswith("\r")
    if cr:
        body = body[:-1]
    m = _TRAILING_WS.search(body)
    tail = ""
    if m:
        body, tail = body[: m.start()], m.group().replace(" ", "␣")
    indent = len(body) - len(body.lstrip(" "))
    body = body[:indent] + _INNER_SPACES.sub(lambda x: "␣" * len(x.group()), body[indent:]) + tail
    body = body.replace("\t", "→").replace("\u00a0", "⍽").replace("\r", "␍")
    return body + ("␍" if cr else "") + ("↵" if nl else "")


def visible_inline(s: str) -> str:
    """A string on one line: newlines ↵, tabs →, CR ␍, and spaces at either end ␣ (inner spaces stay)."""
    s = s.replace("\t", "→").replace("\r", "␍").replace("\n", "↵").replace("\u00a0", "⍽")
    core = s.strip(" ")
    if not core:
        return "␣" * len(s)
    lead = len(s) - len(s.lstrip(" "))
    trail = len(s) - len(s.rstrip(" "))
    return "␣" * lead + core + "␣" * trail


def visible_lines(text: str) -> list[str]:
    return [visible_line(x) for x in text.splitlines(keepends=True)] or [""]


def unified(old: str, new: str, old_label: str, new_label: str, context: int = 2) -> list[str]:
    return list(
        difflib.unified_diff(
            visible_lines(old), visible_lines(new), fromfile=old_label, tofile=new_label, n=context, lineterm=""
        )
    )


def short(value: Any, limit: int = 100) -> str:
    """A value on one line, at most ``limit`` characters, whitespace in strings visible."""
    if isinstance(value, str):
        s = "'" + visible_inline(value) + "'"
    else:
        try:
            s = json.dumps(value, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            s = repr(value)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def short_pair(old: Any, new: Any, limit: int = 100) -> tuple[str, str]:
    """Both values shortened around where they differ when they are long strings."""
    if isinstance(old, str) and isinstance(new, str) and (len(old) > limit - 2 or len(new) > limit - 2):
        i = 0
        while i < min(len(old), len(new)) and old[i] == new[i]:
            i += 1
        j = 0
        while j < min(len(old), len(new)) - i and old[-1 - j] == new[-1 - j]:
            j += 1
        keep = 15
        lo = max(0, i - keep)

        def cut(s: str) -> str:
            hi = min(len(s), len(s) - j + keep)
            return ("…" if lo > 0 else "") + visible_inline(s[lo:hi]) + ("…" if hi < len(s) else "")

        return "'" + cut(old) + "'", "'" + cut(new) + "'"
    return short(old, limit), short(new, limit)


def change_line(c: Change) -> str:
    if c.kind == "added":
        return f"{c.path}: (absent) → {short(c.new)}"
    if c.kind == "removed":
        return f"{c.path}: {short(c.old)} → (absent)"
    o, n = short_pair(c.old, c.new)
    return f"{c.path}: {o} → {n}"


def _counts(t: TaskDiff) -> str:
    if t.status == "added":
        return f"added: {t.new_docs} docs, {t.new_instances} instances"
    if t.status == "removed":
        return f"removed: {t.old_docs} docs, {t.old_instances} instances"
    if t.records_identical:
        return f"records identical ({t.new_docs} docs, {t.new_instances} instances); summary/config only"
    return (
        f"docs {t.old_docs}→{t.new_docs} (+{t.docs_added} -{t.docs_removed} ~{t.docs_changed}), "
        f"instances {t.old_instances}→{t.new_instances} "
        f"(+{t.instances_added} -{t.instances_removed} ~{t.instances_changed}), {t.to_execute} to execute"
    )


def _h(x: str | None) -> str:
    return x[:12] if x else "-"


def render_text(r: DiffReport, max_changes: int = 40) -> str:
    if r.identical:
        return r.summary()
    out: list[str] = [
        f"old: {r.old}  (plan {_h(r.old_plan_hash)}, {r.n_tasks[0]} tasks, {r.n_docs[0]} docs, "
        f"{r.n_instances[0]} instances)",
        f"new: {r.new}  (plan {_h(r.new_plan_hash)}, {r.n_tasks[1]} tasks, {r.n_docs[1]} docs, "
        f"{r.n_instances[1]} instances)",
        "",
        "1. Config and model",
    ]
    if not (r.config or r.model or r.meta or r.groups):
        out.append("  (no differences)")
    for title, changes in (
        ("config", r.config),
        ("model", r.model),
        ("groups (scoring only)", r.groups),
        ("plan", r.meta),
    ):
        for c in changes[:max_changes]:
            # run.reasoning splits responses when scoring (plans/vocab/reasoning.py): no request depends on it
            note = f"  ({CAUSES['scoring']})" if title == "config" and _is_reasoning(c.path) else ""
            out.append(f"  {title}: {change_line(c)}{note}")
        if len(changes) > max_changes:
            out.append(f"  {title}: … {len(changes) - max_changes} more (see --json)")
    changed = [t for t in r.tasks if t.status == "changed"]
    scope = f" matching {r.task_filter!r}" if r.task_filter else ""
    out += [
        "",
        f"2. Tasks{scope}: {len(changed)} changed, "
        f"{sum(t.status == 'added' for t in r.tasks)} added, {sum(t.status == 'removed' for t in r.tasks)} removed, "
        f"{r.tasks_identical} identical",
    ]
    for t in r.tasks:
        out.append(f"  {t.name}: task hash {_h(t.old_hash)} → {_h(t.new_hash)}; {_counts(t)}")
    out += ["", "3. Causes"]
    any_cause = False
    for t in r.tasks:
        if t.status != "changed":
            continue
        out.append(f"  {t.name}:" + ("  [scoring only: no re-execution needed]" if t.scoring_only else ""))
        ordered = sorted(t.causes, key=lambda c: list(CAUSES).index(c.cause) if c.cause in CAUSES else 99)
        for cs in ordered:
            any_cause = True
            touched = []
            if cs.docs:
                touched.append(f"{cs.docs} docs")
            if cs.instances:
                touched.append(f"{cs.instances} instances")
            where = ", ".join(touched) if touched else "no prompt changed"
            out.append(f"    {cs.label}: {where}")
            for ch in cs.config[:5]:
                out.append(f"      {change_line(ch)}")
            for ex in cs.examples[:3]:
                out.append(f"      {_example(cs.cause, ex)}")
    if not any_cause:
        out.append("  (none)")
    out += ["", f"4. Changed prompts (first {len(r.prompts)} of {r.prompts_total})"]
    for p in r.prompts:
        out.append(p.diff)
    if not r.prompts:
        out.append("  (none)")
    out += ["", r.summary()]
    return "\n".join(out)


def _example(cause: str, ex: dict[str, Any]) -> str:
    doc = ex.get("doc_id")
    if cause == "fewshot":
        return f"doc {doc}: few-shot ids {ex.get('old')} → {ex.get('new')}"
    if cause == "doc":
        return f"doc {doc}: fields {', '.join(ex.get('fields', []))}"
    o, n = short_pair(ex.get("old"), ex.get("new"), 60)
    return f"doc {doc}: {o} → {n}"


def _is_reasoning(path: str) -> bool:
    return path == "run.reasoning" or path.startswith(("run.reasoning.", "run.reasoning["))
