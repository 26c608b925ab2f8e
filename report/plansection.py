"""The Plans section: which plan each run came from and, where the runs' plans differ from the baseline's,
the ``lmeval diff`` report (summary, config changes, per-task counts and causes, first changed prompts)."""

from __future__ import annotations

from lmeval.diff import Change, DiffReport, diff_plans, short
from lmeval.report.html import esc
from lmeval.report.inputs import Run

SHOW_PROMPTS = 5


def _changes(title: str, changes: list[Change]) -> str:
    if not changes:
        return ""
    items = "".join(
        f"<li><code>{esc(c.path)}</code>: {esc(short(c.old))} → {esc(short(c.new))}"
        + (f" <span class=dim>({esc(c.kind)})</span>" if c.kind != "changed" else "")
        + "</li>"
        for c in changes
    )
    return f"<h4>{esc(title)}</h4><ul class=changes>{items}</ul>"


def _example(x: object) -> str:
    if isinstance(x, dict) and set(x) == {"doc_id", "old", "new"}:
        return f"doc {x['doc_id']}: {short(x['old'], 70)} → {short(x['new'], 70)}"
    return short(x, 160)


def _udiff(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else ""
        cls = "del" if line.startswith("-") and not line.startswith("---") else cls
        cls = "hunk" if line.startswith("@@") else cls
        lines.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return '<pre class="udiff">' + "\n".join(lines) + "</pre>"


def render_diff(rep: DiffReport, old: Run, new: Run) -> str:
    out = [
        f'<div class="plandiff" data-old="{old.index}" data-new="{new.index}">',
        f"<h3>{esc(old.label)} → {esc(new.label)}</h3>",
        f'<p class="summary">{esc(rep.summary())}</p>',
        _changes("Config", rep.config),
        _changes("Model identity", rep.model),
        _changes("Groups", rep.groups),
    ]
    if rep.tasks:
        out.append(
            '<table class="difftasks"><thead><tr><th>Task</th><th>Status</th><th>Docs</th><th>Instances</th>'
            "<th>Changed docs</th><th>Changed instances</th><th>To execute</th><th>Causes</th></tr></thead><tbody>"
        )
        for t in rep.tasks:
            causes = "<br>".join(
                f"{esc(c.label)}: {c.docs} docs, {c.instances} instances"
                + "".join(f"<div class=dim>{esc(_example(x))}</div>" for x in c.examples[:2])
                for c in t.causes
            )
            out.append(
                f'<tr data-task="{esc(t.name)}"><td>{esc(t.name)}</td><td>{esc(t.status)}</td>'
                f"<td>{t.old_docs} → {t.new_docs}</td><td>{t.old_instances} → {t.new_instances}</td>"
                f"<td>{t.docs_changed} (+{t.docs_added} −{t.docs_removed})</td>"
                f"<td>{t.instances_changed} (+{t.instances_added} −{t.instances_removed})</td>"
                f"<td>{t.to_execute}</td><td>{causes}</td></tr>"
            )
        out.append("</tbody></table>")
    if rep.tasks_identical:
        out.append(f"<p class=dim>{rep.tasks_identical} tasks identical.</p>")
    if rep.prompts:
        out.append(f"<h4>First {len(rep.prompts)} of {rep.prompts_total} changed prompts</h4>")
        for pd in rep.prompts:
            out.append(
                f"<details><summary>{esc(pd.task)} doc {pd.doc_id} (instances {esc(', '.join(map(str, pd.idxs)))})"
                f": {esc(pd.kind)}, {esc(', '.join(pd.causes))}</summary>{_udiff(pd.diff)}</details>"
            )
    out.append("</div>")
    return "".join(x for x in out if x)


def plans_section(runs: list[Run], base: Run) -> str:
    hashes: dict[str, list[str]] = {}
    for r in runs:
        hashes.setdefault(r.plan_hash, []).append(r.label)
    parts = ["<ul class=plans>"]
    for h, labels in hashes.items():
        parts.append(f'<li><span class="hash" title="{esc(h)}">{esc(h[:12])}</span>: {esc(", ".join(labels))}</li>')
    parts.append("</ul>")
    if len(hashes) == 1:
        parts.append("<p>All runs come from the same plan: every prompt and request is identical.</p>")
        return "".join(parts)
    done: set[str] = {base.plan_hash}
    for r in runs:
        if r.plan_hash in done:
            continue
        done.add(r.plan_hash)
        if base.plan is None or r.plan is None:
            missing = base if base.plan is None else r
            parts.append(
                f"<p class=warn>Cannot diff {esc(base.label)} → {esc(r.label)}: plan file of {esc(missing.label)} "
                f"not found ({esc(missing.plan_path)}).</p>"
            )
            continue
        rep = diff_plans(base.plan_path, r.plan_path, show=SHOW_PROMPTS, verify=False, labels=(base.label, r.label))
        parts.append(render_diff(rep, base, r))
    return "".join(parts)
