"""The results table (runs side by side), the per-task charts and the comparison matrix, as HTML."""

from __future__ import annotations

from lmeval.diff import Comparison, MetricDelta
from lmeval.plans import NA
from lmeval.report.charts import Bar, Group, task_chart
from lmeval.report.html import esc, fmt, is_num, raw
from lmeval.report.inputs import Run

_DROP = ("alias", "name", "sample_len", "sample_count")
ARROWS = {True: "↑", False: "↓"}


def table_order(runs: list[Run], column: str) -> list[tuple[str, int]]:
    """(task, depth) in the first run's order, then tasks only later runs have."""
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    for r in runs:
        table = r.results.table(column)
        if not table:
            continue
        depth, order = r.results.depths()
        for t in order:
            if t in table and t not in seen:
                seen.add(t)
                out.append((t, depth.get(t, 0)))
    return out


def metric_keys(runs: list[Run], column: str, task: str) -> list[str]:
    keys: set[str] = set()
    for r in runs:
        m = r.results.table(column).get(task)
        if isinstance(m, dict):
            keys.update(k for k in m if "," in k and "_stderr," not in k and k not in _DROP)
    return sorted(keys)


def alias_of(runs: list[Run], column: str, task: str) -> str:
    for r in runs:
        m = r.results.table(column).get(task)
        if isinstance(m, dict) and isinstance(m.get("alias"), str):
            return str(m["alias"]).strip() or task
    return task


def _per_run(runs: list[Run], field: str, task: str) -> str:
    vals = []
    for r in runs:
        m = r.results.table(field)
        vals.append("" if not isinstance(m, dict) or task not in m else str(m[task]))
    uniq = sorted(set(v for v in vals if v))
    if len(uniq) <= 1:
        return uniq[0] if uniq else ""
    return " / ".join(vals)


def hib_of(runs: list[Run], task: str, metric: str) -> bool | None:
    for r in runs:
        h = r.results.higher_is_better.get(task, {})
        if isinstance(h, dict) and isinstance(h.get(metric), bool):
            return bool(h[metric])
    return None


def results_table(runs: list[Run], column: str, title: str) -> str:
    order = table_order(runs, column)
    if not order:
        return ""
    head = "".join(
        f'<th class="run run{r.index % 8}" colspan="3" data-run="{r.index}">{esc(r.label)}</th>' for r in runs
    )
    out = [
        f'<table class="results" data-column="{esc(column)}"><thead><tr><th>{esc(title)}</th><th>Version</th>'
        f"<th>Filter</th><th>n-shot</th><th>Metric</th><th></th>{head}</tr></thead><tbody>"
    ]
    flags = [r.results.flags() for r in runs]
    for task, depth in order:
        keys = metric_keys(runs, column, task)
        for i, key in enumerate(keys):
            metric, _, filt = key.partition(",")
            hib = hib_of(runs, task, metric)
            cls = ' class="first"' if i == 0 else ""
            name = (
                ("&nbsp;" * 2 * depth + ("- " if depth else "") + esc(alias_of(runs, column, task))) if i == 0 else ""
            )
            cells = [
                f'<td class="task">{name}</td>',
                f"<td>{esc(_per_run(runs, 'versions', task)) if i == 0 else ''}</td>",
                f"<td>{esc(filt)}</td>",
                f"<td>{esc(_per_run(runs, 'n-shot', task)) if i == 0 else ''}</td>",
                f"<td>{esc(metric)}</td>",
                f"<td>{ARROWS.get(hib, '') if hib is not None else ''}</td>",
            ]
            for r, fl in zip(runs, flags, strict=True):
                m = r.results.table(column).get(task)
                v = m.get(key) if isinstance(m, dict) else None
                se = m.get(f"{metric}_stderr,{filt}") if isinstance(m, dict) else None
                attrs = f'data-run="{r.index}" data-task="{esc(task)}" data-key="{esc(key)}"'
                status = fl[task].of(key) if task in fl else None
                if v is not None and status == NA:  # lm-eval's number for a composite that is not one (Scores)
                    why = esc("; ".join(fl[task].reasons))
                    cells.append(f'<td class="value na" {attrs} data-status="n/a" title="{why}">N/A</td>')
                    cells.append("<td></td><td></td>")
                    continue
                if v is None:
                    cells.append(f'<td class="value missing" {attrs}>–</td><td></td><td></td>')
                    continue
                cells.append(f'<td class="value" {attrs} data-value="{esc(raw(v))}">{esc(fmt(v))}</td>')
                if se is None:
                    cells.append("<td></td><td></td>")
                else:
                    se_s = "N/A" if se == "N/A" else fmt(se)
                    cells.append(
                        f'<td class="pm">±</td><td class="se" {attrs} data-value="{esc(raw(se))}">{esc(se_s)}</td>'
                    )
            out.append(f'<tr{cls} data-task="{esc(task)}" data-key="{esc(key)}">{"".join(cells)}</tr>')
    out.append("</tbody></table>")
    return "".join(out)


def interval_table(runs: list[Run]) -> str:
    """results.json's ``intervals`` (``plans.scoredintervals``) side by side: per task or group and metric, each
    run's 95% interval, its clustered stderr and clusters (empty when no run has intervals)."""
    have = [r for r in runs if r.results.intervals is not None and r.results.intervals.metrics]
    if not have:
        return ""
    order = [(t, d) for column in ("results", "groups") for t, d in table_order(runs, column)]
    head = "".join(f'<th class="run run{r.index % 8}" data-run="{r.index}">{esc(r.label)}</th>' for r in runs)
    out = [
        '<h3>Clustered standard errors and 95% intervals</h3><table class="intervals"><thead><tr><th>Task</th>'
        f"<th>Filter</th><th>Metric</th>{head}</tr></thead><tbody>"
    ]
    seen: set[str] = set()
    for task, depth in order:
        if task in seen:
            continue
        seen.add(task)
        keys = sorted(
            {k for r in have for k in (r.results.intervals.metrics.get(task, {}) if r.results.intervals else {})}
        )
        for key in keys:
            metric, _, filt = key.partition(",")
            cells = []
            for r in runs:
                iv = r.results.intervals.get(task, key) if r.results.intervals is not None else None
                if iv is None:
                    cells.append("<td>–</td>")
                    continue
                unit = r.results.intervals.cluster.get(task, "") if r.results.intervals is not None else ""
                se = (
                    "bootstrap"
                    if iv.stderr_clustered is None
                    else f"± {fmt(iv.stderr_clustered)}, {iv.clusters} ({unit})"
                )
                cells.append(
                    f'<td class="ci" data-run="{r.index}" data-task="{esc(task)}" data-key="{esc(key)}" '
                    f'data-low="{raw(iv.low)}" data-high="{raw(iv.high)}">[{esc(fmt(iv.low))}, {esc(fmt(iv.high))}]'
                    f' <span class="se">{esc(se)}</span></td>'
                )
            name = "&nbsp;" * 2 * depth + esc(task)
            out.append(f"<tr><td>{name}</td><td>{esc(filt)}</td><td>{esc(metric)}</td>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def charts(runs: list[Run]) -> str:
    """One chart per task and group (results order), bars for every numeric metric with a value."""
    labels = {r.index: r.label for r in runs}
    flags = {r.index: r.results.flags() for r in runs}
    out: list[str] = []
    for task, _depth in table_order(runs, "results"):
        groups: list[Group] = []
        for key in metric_keys(runs, "results", task):
            metric, _, filt = key.partition(",")
            bars = []
            for r in runs:
                m = r.results.results.get(task)
                if not isinstance(m, dict) or not is_num(m.get(key)):
                    continue
                if task in flags[r.index] and flags[r.index][task].of(key) == NA:
                    continue  # not the composite: no bar
                se = m.get(f"{metric}_stderr,{filt}")
                bars.append(Bar(r.index, float(m[key]), float(se) if se is not None and is_num(se) else None))
            groups.append(Group(key, bars))
        alias = alias_of(runs, "results", task)
        svg = task_chart(task, alias, groups, [labels.get(i, str(i)) for i in range(len(runs))])
        if svg:
            out.append(f'<figure class="chart-box"><figcaption>{esc(alias)}</figcaption>{svg}</figure>')
    return "".join(out)


def is_significant(d: MetricDelta) -> bool:
    """The report's one rule for a marked difference: its paired test's p below 0.05."""
    return d.p is not None and d.p < 0.05


def _cell(d: MetricDelta | None, hib: bool | None, flips: tuple[int, int]) -> str:
    if d is None:
        return '<td class="cmp none">–</td>'
    if d.delta is None:
        return f'<td class="cmp none" title="{esc(fmt(d.a))} → {esc(fmt(d.b))}">n/a</td>'
    sig = is_significant(d)
    better = d.delta > 0 if hib is not False else d.delta < 0
    cls = "cmp" + ((" better" if better else " worse") if sig and d.delta != 0 else "")
    se = f" ± {fmt(d.se)}" if d.se is not None else ""
    p = "" if d.p is None else f'<span class="p">p={d.p:.3g}{" *" if sig else ""}</span>'
    n = f'<span class="n">n={d.n_paired}</span>' if d.n_paired else ""
    if d.p_test is not None and d.test != "normal":
        n += f' <span class="ptest">{esc(d.test or "")} p={d.p_test:.3g}</span>'
    if d.low is not None and d.high is not None:
        n += f' <span class="ci">95% CI [{d.low:+.4f}, {d.high:+.4f}]</span>'
    if d.mde is not None:
        n += f' <span class="mde" title="minimum detectable effect, 80% power">MDE {d.mde:.4f}</span>'
    up, down = flips
    fl = f'<span class="flips" title="documents now right / now wrong">▲{up} ▼{down}</span>' if up or down else ""
    attrs = (
        f'data-task="{esc(d.task)}" data-key="{esc(d.metric)},{esc(d.filter)}" data-delta="{raw(d.delta)}" '
        f'data-p="{raw(d.p)}" data-se="{raw(d.se)}" data-p-test="{raw(d.p_test)}" data-mde="{raw(d.mde)}"'
    )
    return f'<td class="{cls}" {attrs}><b>{d.delta:+.4f}</b>{esc(se)} {p} {n} {fl}</td>'


def comparison_matrix(runs: list[Run], base: Run, comps: dict[int, Comparison]) -> str:
    """Rows: task × metric; columns: every run but the baseline; cells: Δ vs the baseline ± paired SE, p, flips."""
    others = [r for r in runs if r.index != base.index]
    index: dict[int, dict[tuple[str, str], MetricDelta]] = {}
    flips: dict[int, dict[tuple[str, str], tuple[int, int]]] = {}
    for r in others:
        c = comps[r.index]
        index[r.index] = {(d.task, f"{d.metric},{d.filter}"): d for d in c.deltas}
        f: dict[tuple[str, str], list[int]] = {}
        for fl in c.flips:
            k = (fl.task, f"{fl.metric},{fl.filter}")
            up_down = f.setdefault(k, [0, 0])
            up_down[0 if fl.b > fl.a else 1] += 1
        flips[r.index] = {k: (v[0], v[1]) for k, v in f.items()}
    head = "".join(f'<th class="run run{r.index % 8}">{esc(r.label)} − {esc(base.label)}</th>' for r in others)
    out = [f'<table class="matrix"><thead><tr><th>Task</th><th>Metric</th><th>Filter</th>{head}</tr></thead><tbody>']
    for task, depth in table_order(runs, "results"):
        for key in metric_keys(runs, "results", task):
            metric, _, filt = key.partition(",")
            if not any((task, key) in index[r.index] for r in others):
                continue
            hib = hib_of(runs, task, metric)
            name = "&nbsp;" * 2 * depth + esc(alias_of(runs, "results", task))
            cells = "".join(
                _cell(index[r.index].get((task, key)), hib, flips[r.index].get((task, key), (0, 0))) for r in others
            )
            out.append(f"<tr><td>{name}</td><td>{esc(metric)}</td><td>{esc(filt)}</td>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)
