"""The terminal table (lm-eval's layout: Tasks, Version, Filter, n-shot, Metric, direction, Value, ±, Stderr)."""

from __future__ import annotations

from typing import Any

from lmeval.plans import DOCUMENT, NA, PARTIAL, RESULTS_JSON, ScoredRun, side_by_side

_ARROW = {True: "↑", False: "↓"}


def rows(run: ScoredRun, column: str = "results") -> list[list[str]]:
    """The table's rows for ``column`` (``results`` or ``groups``), in lm-eval's order."""
    depth, order = run.depths()
    table = run.table(column)
    flags = run.flags()
    out: list[list[str]] = []
    for k in [k for k in order if k in table]:
        dic = dict(table[k])
        flag = flags.get(k)
        for bare in [m for m in (flag.metrics if flag else {}) if "," not in m and m != "*"]:
            dic.setdefault(f"{bare},", NA)  # a flagged metric with no value yet (a judge-graded task ungraded)
        version = run.versions.get(k, "    N/A")
        n = str(run.n_shot.get(k, " "))
        hib = run.higher_is_better.get(k, {})
        name = dic.pop("alias", k)
        for drop in ("name", "sample_len", "sample_count"):
            dic.pop(drop, None)
        if depth.get(k, 0) > 0:
            name = " " * depth[k] + "- " + name
        if flag is not None and PARTIAL in flag.metrics.values():
            name += f" ({PARTIAL})"
        for mf, v in sorted(dic.items()):
            m, _, f = mf.partition(",")
            if m.endswith("_stderr"):
                continue
            up = hib.get(m)
            arrow = _ARROW[up] if isinstance(up, bool) else ""
            value = f"{v:.4f}" if isinstance(v, float) else str(v)
            if flag is not None and flag.of(mf) == NA:
                value = "N/A"
            se_key = f"{m}_stderr,{f}"
            if se_key in dic and value != "N/A":
                se = dic[se_key]
                se_s = "   N/A" if se == "N/A" else f"{se:.4f}"
                out.append([name, str(version), f, n, m, arrow, value, "±", se_s])
            else:
                out.append([name, str(version), f, n, m, arrow, value, "", ""])
            name, version, n = "", "", ""
    return out


def composite_lines(run: ScoredRun) -> list[str]:
    """One line per partial or N/A task or group: what is missing (``composites`` in results.json)."""
    out = []
    for name, f in run.flags().items():
        na = sorted(k for k, s in f.metrics.items() if s == NA and k != "*")
        what = f"N/A ({', '.join(na)})" if na and f.status != NA else f.status.upper()
        out.append(f"{name}: {what}: " + "; ".join(f.reasons))
    if any(f.missing for f in run.flags().values()):
        out.append(f"(N/A: a mean over the members that have a score is another composite; lm-eval's number for it "
                   f"stays in {RESULTS_JSON}, see 'composites')")  # fmt: skip
    return out


INTERVAL_HEADER = ("Tasks", "Filter", "Metric", "Value", "Stderr", "Clustered", "Clusters", "95% interval")


def interval_rows(run: ScoredRun) -> list[list[str]]:
    """Per task or group and metric whose interval adds something to lm-eval's stderr (``intervals``: clusters
    other than documents, a group's subtasks): the value, lm-eval's stderr, the clustered stderr with its cluster
    unit and count, and the 95% interval, in lm-eval's order. Clusters of one document each repeat lm-eval's
    stderr: no row."""
    iv = run.intervals
    if iv is None:
        return []
    depth, order = run.depths()
    flags = run.flags()
    out: list[list[str]] = []
    for task in [t for t in order if t in iv.metrics and iv.cluster.get(t, DOCUMENT) != DOCUMENT]:
        name = " " * depth.get(task, 0) + task
        for key, m in sorted(iv.metrics[task].items()):
            metric, _, filt = key.partition(",")
            res = run.results.get(task, {})
            se = res.get(f"{metric}_stderr,{filt}")
            cl = "–" if m.stderr_clustered is None else f"{m.stderr_clustered:.4f}"
            unit = iv.cluster.get(task, "")
            n = "–" if m.clusters is None else f"{m.clusters} ({unit})"
            how = "" if m.method == "normal" else " boot"
            ci = f"[{m.low:.4f}, {m.high:.4f}]{how}"
            if (flag := flags.get(task)) is not None and flag.of(key) == NA:
                out.append([name, filt, metric, "N/A", "–", "–", "–", "–"])
            else:
                out.append([name, filt, metric, _value(res.get(key)), _value(se), cl, n, ci])
            name = ""
    return out


def print_interval_table(run: ScoredRun) -> None:
    """The clustered stderrs and 95% intervals (``intervals``), after lm-eval's tables."""
    from rich.table import Table

    body = interval_rows(run)
    if not body:
        return
    t = Table(show_edge=True, header_style="bold", title="Clustered stderr and 95% intervals")
    for h in INTERVAL_HEADER:
        t.add_column(h, justify="left" if h in ("Tasks", "Filter", "Metric") else "right", no_wrap=True)
    for r in body:
        t.add_row(*r)
    _console().print(t)


CLEAN_HEADER = ("Tasks", "Filter", "Metric", "All", "Clean", "Excluded", "Δ clean−all")


def _value(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, float) else ("–" if v is None else str(v))


def clean_rows(run: ScoredRun) -> list[list[str]]:
    """The all-vs-clean table of a run scored with ``--exclude`` (empty otherwise), in lm-eval's order."""
    if run.contamination is None:
        return []
    depth, order = run.depths()
    out: list[list[str]] = []
    last = ""
    for r in side_by_side(run.results, run.contamination, order):
        name = "" if r.task == last else " " * depth.get(r.task, 0) + r.task
        last = r.task
        n = f"{r.excluded} of {r.n_all}" if r.excluded is not None and r.n_all is not None else "–"
        delta = "–" if r.delta is None else f"{r.delta:+.4f}"
        out.append([name, r.filter, r.metric, _value(r.all), _value(r.clean), n, delta])
    return out


def _console() -> Any:
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)  # piped: never truncate task names
    return console


def print_clean_table(run: ScoredRun, title: str = "") -> None:
    """``--exclude``: per task and metric, the score on all documents, on the clean subset, and their Δ."""
    from rich.table import Table

    body = clean_rows(run)
    if not body or run.contamination is None:
        return
    t = Table(show_edge=True, header_style="bold", title=title or f"Contamination: {run.contamination.report}")
    for h in CLEAN_HEADER:
        t.add_column(h, justify="left" if h in ("Tasks", "Filter", "Metric") else "right", no_wrap=True)
    for r in body:
        t.add_row(*r)
    _console().print(t)


def print_tables(run: ScoredRun) -> None:
    from rich.table import Table

    console = _console()
    for column, title in (("results", "Tasks"), ("groups", "Groups")):
        body = rows(run, column)
        if not body:
            continue
        t = Table(show_edge=True, header_style="bold")
        for h in (title, "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"):
            t.add_column(h, justify="right" if h in ("Value", "Stderr") else "left", no_wrap=True)
        for r in body:
            t.add_row(*r)
        console.print(t)
    for line in composite_lines(run):
        console.print(line, markup=False)
    print_interval_table(run)
    print_clean_table(run)
    if run.partial:
        parts = ", ".join(f"{k}: {v.missing_instances} missing" for k, v in run.partial.items())
        console.print(f"[bold red]PARTIAL RESULTS[/bold red] ({parts}); see 'partial' in {RESULTS_JSON}")


def print_score(outcome: Any) -> None:
    """What ``lmeval score`` and ``lmeval run`` print for a scored run (a ``scorer.score_run`` outcome): the
    tables, the subset notes, and each JSONL spec task's scores by category."""
    print_tables(outcome.run)
    for line in outcome.notes:
        print(line)
    for task, agg in outcome.run.spec.items():
        cats = ", ".join(f"{c} {v['score']:.4f} (n={v['n']})" for c, v in agg["categories"].items())
        print(f"{task} by category: {cats}; overall {agg['overall']['score']:.4f} (n={agg['overall']['n']})")
