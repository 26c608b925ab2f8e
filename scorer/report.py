"""The terminal table (lm-eval's layout: Tasks, Version, Filter, n-shot, Metric, direction, Value, ±, Stderr)."""

from __future__ import annotations

from typing import Any

_ARROW = {True: "↑", False: "↓"}


def _depths(results: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    subtasks: dict[str, list[str]] = results.get("group_subtasks", {})
    present = set(results["results"])
    children = {c for cs in subtasks.values() for c in cs}
    depth: dict[str, int] = {}
    order: list[str] = []

    def visit(name: str, d: int) -> None:
        if name in depth:
            return
        depth[name] = d
        if name in present:
            order.append(name)
        for c in subtasks.get(name, []):
            visit(c, d + 1)

    for name in list(subtasks) + sorted(present):
        if name not in children:
            visit(name, 0)
    for name in sorted(present - set(order)):
        order.append(name)
    return depth, order


def rows(results: dict[str, Any], column: str = "results") -> list[list[str]]:
    depth, order = _depths(results)
    keys = [k for k in order if k in results.get(column, {})]
    out: list[list[str]] = []
    for k in keys:
        dic = dict(results[column][k])
        version = results.get("versions", {}).get(k, "    N/A")
        n = str(results.get("n-shot", {}).get(k, " "))
        hib = results.get("higher_is_better", {}).get(k, {})
        name = dic.pop("alias", k)
        for drop in ("name", "sample_len", "sample_count"):
            dic.pop(drop, None)
        if depth.get(k, 0) > 0:
            name = " " * depth[k] + "- " + name
        for mf, v in sorted(dic.items()):
            m, _, f = mf.partition(",")
            if m.endswith("_stderr"):
                continue
            arrow = _ARROW.get(hib.get(m), "") if isinstance(hib.get(m), bool) else ""
            value = f"{v:.4f}" if isinstance(v, float) else str(v)
            se_key = f"{m}_stderr,{f}"
            if se_key in dic:
                se = dic[se_key]
                se_s = "   N/A" if se == "N/A" else f"{se:.4f}"
                out.append([name, str(version), f, n, m, arrow, value, "±", se_s])
            else:
                out.append([name, str(version), f, n, m, arrow, value, "", ""])
            name, version, n = "", "", ""
    return out


def print_tables(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)  # piped: never truncate task names
    for column, title in (("results", "Tasks"), ("groups", "Groups")):
        if column not in results or not results[column]:
            continue
        body = rows(results, column)
        if not body:
            continue
        t = Table(show_edge=True, header_style="bold")
        for h in (title, "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"):
            t.add_column(h, justify="right" if h in ("Value", "Stderr") else "left", no_wrap=True)
        for r in body:
            t.add_row(*r)
        console.print(t)
    if results.get("partial"):
        parts = ", ".join(f"{k}: {v['missing_instances']} missing" for k, v in results["partial"].items())
        console.print(f"[bold red]PARTIAL RESULTS[/bold red] ({parts}); see 'partial' in results.json")
