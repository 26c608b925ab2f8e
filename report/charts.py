"""Per-task bar charts as inline SVG: one group of bars per metric (and filter), one bar per run, with the
95% interval (value ± 1.96 stderr) as a whisker. Coordinates are rounded to 0.01 so the same values give
the same bytes. Every bar carries its run, metric key and exact value as data attributes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from lmeval.report.html import esc, fmt, raw

_Z95 = 1.959963984540054  # two-sided 95% normal quantile
BAR = 18
GAP = 14
PLOT_H = 120
TOP = 10
BOTTOM = 40
LEFT = 40
RIGHT = 8


@dataclass
class Bar:
    run: int
    value: float
    stderr: float | None


@dataclass
class Group:
    key: str  # "metric,filter"
    bars: list[Bar]


def normal_interval(value: float, stderr: float) -> tuple[float, float]:
    """The 95% interval the charts draw: value ∓ 1.96 stderr."""
    return value - _Z95 * stderr, value + _Z95 * stderr


def _nice_up(x: float) -> float:
    if x <= 0:
        return 1.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 2.5, 5, 10):
        if m * 10**e >= x:
            return float(m * 10**e)
    return float(10 ** (e + 1))


def span(xs: list[float]) -> tuple[float, float]:
    """[0, 1] when every number fits (accuracies); otherwise 0 and a round number beyond the data."""
    lo, hi = min([0.0, *xs]), max([0.0, *xs])
    if lo >= 0 and hi <= 1:
        return 0.0, 1.0
    return (-_nice_up(-lo) if lo < 0 else 0.0), _nice_up(hi)


def axis_range(groups: list[Group]) -> tuple[float, float]:
    """The axis of a task's chart: ``span`` over every value and interval end."""
    xs: list[float] = []
    for g in groups:
        for b in g.bars:
            ci = _Z95 * b.stderr if b.stderr is not None else 0.0
            xs += [b.value - ci, b.value + ci]
    return span(xs)


def _c(x: float) -> str:
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def task_chart(task: str, title: str, groups: list[Group], run_labels: list[str]) -> str:
    """One task's chart; ``groups`` in display order, bars within a group in run order."""
    groups = [g for g in groups if g.bars]
    if not groups:
        return ""
    lo, hi = axis_range(groups)
    n_runs = max(len(g.bars) for g in groups)
    longest = max(len(part) for g in groups for part in g.key.split(","))
    group_w = max(n_runs * BAR + GAP, 7 * longest)
    width = LEFT + len(groups) * group_w + RIGHT
    height = TOP + PLOT_H + BOTTOM

    def y(v: float) -> float:
        v = min(max(v, lo), hi)
        return TOP + PLOT_H * (hi - v) / (hi - lo)

    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" data-task="{esc(task)}" data-lo="{raw(lo)}" '
        f'data-hi="{raw(hi)}" data-plot-top="{TOP}" data-plot-height="{PLOT_H}">',
        f"<title>{esc(title)}</title>",
    ]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        yy = _c(y(v))
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{yy}" y2="{yy}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 4}" y="{yy}" dy="3" text-anchor="end">{_c(v)}</text>')
    y0 = _c(y(0.0))
    for gi, g in enumerate(groups):
        gx = LEFT + gi * group_w + (group_w - len(g.bars) * BAR) / 2
        for bi, b in enumerate(g.bars):
            x = gx + bi * BAR
            top, bottom = sorted((y(b.value), y(0.0)))
            ci = _Z95 * b.stderr if b.stderr is not None else None
            label = f"{run_labels[b.run]}: {g.key} = {fmt(b.value)}"
            if ci is not None:
                label += f" (95% CI {fmt(b.value - ci)} to {fmt(b.value + ci)})"
            parts.append(
                f'<rect class="bar run{b.run % 8}" x="{_c(x + 1)}" y="{_c(top)}" width="{BAR - 2}" '
                f'height="{_c(bottom - top)}" data-run="{b.run}" data-key="{esc(g.key)}" '
                f'data-value="{raw(b.value)}"><title>{esc(label)}</title></rect>'
            )
            if ci is not None and ci > 0:
                cx = _c(x + BAR / 2)
                y1, y2 = _c(y(b.value + ci)), _c(y(b.value - ci))
                parts.append(
                    f'<path class="ci" d="M{cx} {y1}V{y2}M{_c(x + 5)} {y1}H{_c(x + BAR - 5)}'
                    f'M{_c(x + 5)} {y2}H{_c(x + BAR - 5)}" data-run="{b.run}" data-key="{esc(g.key)}" '
                    f'data-ci-lo="{raw(b.value - ci)}" data-ci-hi="{raw(b.value + ci)}"/>'
                )
        metric, _, filt = g.key.partition(",")
        cx = _c(gx + len(g.bars) * BAR / 2)
        parts.append(f'<text class="xl" x="{cx}" y="{TOP + PLOT_H + 14}" text-anchor="middle">{esc(metric)}</text>')
        if filt and filt != "none":
            parts.append(f'<text class="xl2" x="{cx}" y="{TOP + PLOT_H + 26}" text-anchor="middle">{esc(filt)}</text>')
    parts.append(f'<line class="axis" x1="{LEFT}" x2="{width - RIGHT}" y1="{y0}" y2="{y0}"/>')
    parts.append("</svg>")
    return "".join(parts)


ROW_H, CHART_W, PAD = 8, 240, 8


def _x(v: float, lo: float, hi: float) -> float:
    return PAD + (CHART_W - 2 * PAD) * (min(max(v, lo), hi) - lo) / (hi - lo)


def scale_svg(lo: float, hi: float) -> str:
    """The scores chart's axis (its column's header): five ticks over ``[lo, hi]``."""
    parts = [f'<svg class="scale" xmlns="http://www.w3.org/2000/svg" width="{CHART_W}" height="16" '
             f'viewBox="0 0 {CHART_W} 16" data-lo="{raw(lo)}" data-hi="{raw(hi)}">']  # fmt: skip
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        anchor = "start" if k == 0 else ("end" if k == 4 else "middle")
        parts.append(f'<text class="tick" x="{_c(_x(v, lo, hi))}" y="11" text-anchor="{anchor}">{_c(v)}</text>')
    return "".join(parts) + "</svg>"


def row_svg(label: str, points: list[tuple[int, float | None, float | None, float | None]], lo: float, hi: float,
            run_labels: list[str]) -> str:  # fmt: skip
    """One row of the scores chart (a cell beside the row's numbers): per run a bar from 0 to its score and its
    95% interval as a whisker, on the axis every row shares (``[lo, hi]``)."""
    shown = [(run, v, a, b) for run, v, a, b in points if v is not None]
    height = max(len(points), 1) * ROW_H + 4
    parts = [f'<svg class="forest" xmlns="http://www.w3.org/2000/svg" width="{CHART_W}" height="{height}" '
             f'viewBox="0 0 {CHART_W} {height}" role="img" data-lo="{raw(lo)}" data-hi="{raw(hi)}">']  # fmt: skip
    for k in range(5):
        gx = _c(_x(lo + (hi - lo) * k / 4, lo, hi))
        parts.append(f'<line class="grid" x1="{gx}" x2="{gx}" y1="0" y2="{height}"/>')
    for j, (run, v, low, high) in enumerate(points):
        if v is None:
            continue
        y = 2 + j * ROW_H
        a, b = sorted((_x(0.0, lo, hi), _x(v, lo, hi)))
        ci = f" (95% CI {fmt(low)} to {fmt(high)})" if low is not None and high is not None else ""
        parts.append(f'<rect class="bar run{run % 8}" x="{_c(a)}" y="{y}" width="{_c(max(b - a, 1.5))}" '
                     f'height="{ROW_H - 2}" data-run="{run}" data-value="{raw(v)}">'
                     f"<title>{esc(f'{run_labels[run]}: {label} = {fmt(v)}{ci}')}</title></rect>")  # fmt: skip
        if low is not None and high is not None:
            ym = _c(y + (ROW_H - 2) / 2)
            parts.append(f'<path class="ci" d="M{_c(_x(low, lo, hi))} {ym}H{_c(_x(high, lo, hi))}" data-run="{run}" '
                         f'data-ci-lo="{raw(low)}" data-ci-hi="{raw(high)}"/>')  # fmt: skip
    x0 = _c(_x(0.0, lo, hi))
    parts.append(f'<line class="axis" x1="{x0}" x2="{x0}" y1="0" y2="{height}"/>' if shown else "")
    return "".join(parts) + "</svg>"
