"""The contamination section: for each run scored with ``lmeval score --exclude REPORT``, per task and metric,
the score on all documents, on the clean subset, the documents excluded and the difference (read from
results.json's ``contamination`` field through the scored-run contract, ``plans.scoredclean``)."""

from __future__ import annotations

from lmeval.plans import side_by_side
from lmeval.report.html import esc, fmt, raw
from lmeval.report.inputs import Run


def has_contamination(runs: list[Run]) -> bool:
    return any(r.results.contamination is not None for r in runs)


def _run_table(r: Run) -> str:
    c = r.results.contamination
    if c is None:
        return ""
    depth, order = r.results.depths()
    n_ids = sum(len(v) for v in c.excluded.values())
    out = [
        f'<h3 class="run{r.index % 8}">{esc(r.label)}</h3><p>Contamination report <code>{esc(c.report)}</code>: '
        f"{n_ids} document(s) excluded in {len(c.excluded)} task(s). Δ = clean − all.</p>",
        f'<table class="clean" data-run="{r.index}"><thead><tr><th>Task</th><th>Filter</th><th>Metric</th>'
        "<th>All</th><th>Clean</th><th>Excluded</th><th>Δ</th></tr></thead><tbody>",
    ]
    last = ""
    for row in side_by_side(r.results.results, c, order):
        first = row.task != last
        last = row.task
        name = "&nbsp;" * 2 * depth.get(row.task, 0) + esc(row.task) if first else ""
        n = f"{row.excluded} of {row.n_all}" if row.excluded is not None and row.n_all is not None else "–"
        delta = "–" if row.delta is None else f"{row.delta:+.4f}"
        attrs = f'data-task="{esc(row.task)}" data-key="{esc(row.metric)},{esc(row.filter)}"'
        out.append(
            f'<tr{" class=first" if first else ""} {attrs}><td class="task">{name}</td><td>{esc(row.filter)}</td>'
            f"<td>{esc(row.metric)}</td>"
            f'<td class="value all" data-value="{esc(raw(row.all))}">{esc(fmt(row.all))}</td>'
            f'<td class="value clean" data-value="{esc(raw(row.clean))}">{esc(fmt(row.clean))}</td>'
            f'<td class="value excluded" data-value="{esc(raw(row.excluded))}">{esc(n)}</td>'
            f'<td class="value delta" data-value="{esc(raw(row.delta))}">{esc(delta)}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def contamination_section(runs: list[Run]) -> str:
    """The section's HTML (empty when no run was scored with ``--exclude``)."""
    if not has_contamination(runs):
        return ""
    return (
        '<section id="contamination"><h2>Contamination: all documents vs clean</h2>'
        "<p>Runs scored with <code>lmeval score --exclude REPORT</code>: the Results above are the clean subset "
        "(the documents the contamination report did not flag); here each is beside the score on all documents."
        "</p>" + "".join(_run_table(r) for r in runs) + "</section>"
    )
