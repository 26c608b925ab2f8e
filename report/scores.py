"""The report's first screen (#62): every task's and group's scores with their 95% intervals, runs side by side,
each run's difference from the baseline marked where it is significant (``lmeval compare``'s paired test, as
the comparison matrix), beside a chart of the same numbers; partial and N/A composites labelled with what they
lack (results.json's ``composites``, ``plans/scored/composites.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from lmeval.diff import Comparison, MetricDelta
from lmeval.plans import NA, PARTIAL, Flag
from lmeval.report.charts import normal_interval, row_svg, scale_svg, span
from lmeval.report.html import esc, fmt, is_num, raw
from lmeval.report.inputs import Run
from lmeval.report.tables import alias_of, hib_of, is_significant, metric_keys, table_order


@dataclass
class Cell:
    """One run's score of one task or group and metric."""

    value: float | None
    low: float | None = None
    high: float | None = None
    status: str = ""  # "", partial or n/a (composites)
    delta: MetricDelta | None = None  # against the baseline (not for the baseline itself)


def _cell(r: Run, task: str, key: str, flags: dict[str, Flag], delta: MetricDelta | None) -> Cell:
    m = r.results.results.get(task)
    v = m.get(key) if isinstance(m, dict) else None
    flag = flags.get(task)
    status = (flag.of(key) or "") if flag is not None else ""
    if status == NA or not is_num(v):
        return Cell(None, status=status if isinstance(m, dict) and key in m or status == NA else "")
    value = float(v)  # type: ignore[arg-type]
    iv = r.results.intervals.get(task, key) if r.results.intervals is not None else None
    if iv is not None:
        return Cell(value, iv.low, iv.high, status, delta)
    metric, _, filt = key.partition(",")
    se = m.get(f"{metric}_stderr,{filt}") if isinstance(m, dict) else None
    if is_num(se):
        return Cell(value, *normal_interval(value, float(se)), status, delta)  # type: ignore[arg-type]
    return Cell(value, status=status, delta=delta)


def _keys(runs: list[Run], task: str, flags: list[dict[str, Flag]]) -> list[str]:
    """The task's metric keys, and a flagged metric no run has a value for yet (an ungraded judge-graded task)."""
    keys = metric_keys(runs, "results", task)
    bare = {k for f in flags if task in f for k in f[task].metrics if "," not in k and k != "*"}
    return keys + sorted(b for b in bare if not any(k.startswith(b + ",") for k in keys))


def score_rows(runs: list[Run], base: Run, comps: dict[int, Comparison]) -> list[tuple[str, int, str, list[Cell]]]:
    """(task or group, depth, "metric,filter", one cell per run) in the results table's order."""
    flags = [r.results.flags() for r in runs]
    deltas = {i: {(d.task, f"{d.metric},{d.filter}"): d for d in c.deltas} for i, c in comps.items()}
    out = []
    for task, depth in table_order(runs, "results"):
        for key in _keys(runs, task, flags):
            cells = [
                _cell(r, task, key, flags[k], deltas.get(r.index, {}).get((task, key))) for k, r in enumerate(runs)
            ]
            out.append((task, depth, key, cells))
    return out


def _value_html(c: Cell, r: Run, base: Run, hib: bool | None, why: str) -> str:
    title = f' title="{esc(why)}"' if why else ""
    if c.status == NA:
        return f'<td class="value na" data-run="{r.index}" data-status="n/a"{title}>N/A</td><td></td>'
    if c.value is None:
        return f'<td class="value missing" data-run="{r.index}">–</td><td></td>'
    ci = f"[{fmt(c.low)}, {fmt(c.high)}]" if c.low is not None and c.high is not None else ""
    tag = f' <span class="tag partial"{title}>partial</span>' if c.status == PARTIAL else ""
    attrs = f'data-run="{r.index}" data-value="{raw(c.value)}" data-status="{esc(c.status)}"'
    mark = ""
    d = c.delta
    if r.index != base.index and d is not None and d.delta:
        sig = is_significant(d)
        better = d.delta > 0 if hib is not False else d.delta < 0
        cls = ("better" if better else "worse") if sig and d.delta != 0 else "same"
        p = f"p={d.p:.3g}" if d.p is not None else "no p-value"
        mark = (f' <span class="delta {cls}" data-sig="{int(sig)}" title="vs {esc(base.label)}: {esc(p)}">'
                f"{d.delta:+.4f}{' *' if sig else ''}</span>")  # fmt: skip
    return f'<td class="value" {attrs}>{esc(fmt(c.value))}{tag}{mark}</td><td class="ci">{esc(ci)}</td>'


def scores_section(runs: list[Run], base: Run, comps: dict[int, Comparison]) -> str:
    """The Scores section: the table, the chart beside it, and what the partial and N/A composites lack."""
    rows = score_rows(runs, base, comps)
    if not rows:
        return '<section id="scores"><h2>Scores</h2><p>No scores.</p></section>'
    flags = [r.results.flags() for r in runs]
    head = "".join(
        f'<th class="run run{r.index % 8}" colspan="2" data-run="{r.index}">{esc(r.label)}'
        + (" (baseline)" if r.index == base.index and len(runs) > 1 else "") + "</th>"
        for r in runs
    )  # fmt: skip
    lo, hi = span([c.value for *_, cells in rows for c in cells if c.value is not None])  # whiskers clipped to it
    labels = [r.label for r in runs]
    out = [f'<table class="scores"><thead><tr><th>Task</th><th>Metric</th><th></th>{head}'
           '<th class="chart">95% intervals</th></tr><tr class="sub"><th></th><th></th><th></th>'
           + '<th class="value">score</th><th class="ci">95% interval</th>' * len(runs)
           + f'<th class="chart">{scale_svg(lo, hi)}</th></tr></thead><tbody>']  # fmt: skip
    last = ""
    for task, depth, key, cells in rows:
        metric, _, filt = key.partition(",")
        hib = hib_of(runs, task, metric)
        alias = alias_of(runs, "results", task)
        name = ("&nbsp;" * 2 * depth + esc(alias)) if task != last else ""
        cls = ' class="first"' if task != last else ""
        last = task
        tds = "".join(
            _value_html(c, r, base, hib, "; ".join(flags[k][task].reasons) if task in flags[k] else "")
            for k, (c, r) in enumerate(zip(cells, runs, strict=True))
        )
        shown = metric + (f" ({filt})" if filt and filt != "none" else "")
        arrow = {True: "↑", False: "↓"}.get(hib, "") if hib is not None else ""
        points = [(r.index, c.value, c.low, c.high) for r, c in zip(runs, cells, strict=True)]
        chart = row_svg(f"{alias} {shown}", points, lo, hi, labels)
        out.append(f'<tr{cls} data-task="{esc(task)}" data-key="{esc(key)}"><td class="task">{name}</td>'
                   f'<td>{esc(shown)}</td><td>{arrow}</td>{tds}<td class="chart">{chart}</td></tr>')  # fmt: skip
    out.append("</tbody></table>")
    return (
        '<section id="scores"><h2>Scores</h2>'
        + _notes(runs, flags)
        + "".join(out)
        + '<p class="dim">95% interval: the clustered interval where results.json has one, else value ± 1.96 '
        + "stderr. "
        + (
            "Beside a run's score: its difference from the baseline (* and colour: p &lt; 0.05, the paired test "
            'of <a href="#comparison">Comparison</a>). '
            if len(runs) > 1
            else ""
        )
        + "Provenance, configs and prompts follow.</p></section>"
    )


def _notes(runs: list[Run], flags: list[dict[str, Flag]]) -> str:
    """What the partial and N/A composites lack, one line per kind of gap (its runs and tasks or groups)."""
    lines: dict[tuple[str, str], list[str]] = {}
    for r, fl in zip(runs, flags, strict=True):
        for name, f in fl.items():
            who = f"{name} ({r.label})" if len(runs) > 1 else name
            lines.setdefault((f.status, "; ".join(f.reasons)), []).append(who)
    items = [
        f'<li data-status="{esc(status)}"><b class="{"na" if status == NA else "partial"}">'
        f"{'N/A' if status == NA else 'partial'}</b> {esc(', '.join(names))}: {esc(why)}</li>"
        for (status, why), names in lines.items()
    ]
    return f'<ul class="composites">{"".join(items)}</ul>' if items else ""
