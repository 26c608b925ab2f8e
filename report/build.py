"""Assemble the report: read the runs, compute the sections, inline the data, CSS and script into one HTML
page. The same inputs give the same bytes: no clock, no random ids, sorted JSON, fixed number formats."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from lmeval.common import write_atomic
from lmeval.diff import Comparison
from lmeval.diff import compare_runs as compare
from lmeval.plans import reraised_as
from lmeval.report.cleanscore import contamination_section, has_contamination
from lmeval.report.diagnostics import LABELS, Finding, run_findings
from lmeval.report.errors import ReportError
from lmeval.report.formatsection import formats_section
from lmeval.report.formatview import run_format_views
from lmeval.report.html import esc, json_script
from lmeval.report.inputs import PlanView, Run, label_runs, load_run
from lmeval.report.plansection import plans_section
from lmeval.report.provenance import provenance_table
from lmeval.report.samples import LL_DIGITS, task_order, task_payload
from lmeval.report.scores import scores_section
from lmeval.report.tables import charts, comparison_matrix, interval_table, results_table
from lmeval.scorer import ScoreError

GENERATOR = "lmeval report"


def _asset(name: str) -> str:
    return resources.files("lmeval.report").joinpath("assets", name).read_text(encoding="utf-8")


def load_runs(dirs: list[str], baseline: str | None = None) -> tuple[list[Run], Run]:
    """The runs in command-line order (the baseline first when it was given separately) and the baseline."""
    if not dirs:
        raise ReportError("report needs at least one results directory")
    paths = list(dirs)
    if baseline is not None and not any(_same(baseline, d) for d in paths):
        paths.insert(0, baseline)
    seen: dict[str, str] = {}
    for p in paths:
        key = os.path.realpath(p)
        if key in seen:
            raise ReportError(f"{p}: results directory given twice (also as {seen[key]})")
        seen[key] = p
    plans: dict[str, PlanView | None] = {}
    runs = [load_run(i, p, plans) for i, p in enumerate(paths)]
    label_runs(runs)
    base = next((r for r in runs if baseline is not None and _same(baseline, r.path)), runs[0])
    return runs, base


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _findings_table(findings: list[Finding], runs: list[Run]) -> str:
    if not findings:
        return (
            "<p>Nothing to report: no truncated contexts, no generations at max_gen_toks, no empty or missing "
            "answers.</p>"
        )
    out = [
        '<table class="diag"><thead><tr><th>Run</th><th>Task</th><th>What</th><th>Count</th><th>Documents</th>'
        "</tr></thead><tbody>"
    ]
    for f in findings:
        r = runs[f.run]
        count = f"{f.count:,} of {f.total:,}" if f.total else (f"{f.count:,}" if f.count else "")
        docs = " ".join(
            f'<a href="#doc/{esc(f.task)}/{d}" class="doclink" data-task="{esc(f.task)}" data-doc="{d}">{d}</a>'
            for d in f.doc_ids
        )
        more = " …" if f.count > len(f.doc_ids) and f.doc_ids else ""
        what = LABELS[f.kind] if f.kind != "note" else esc(f.detail)
        detail = f' <span class="dim">({esc(f.detail)})</span>' if f.detail and f.kind != "note" else ""
        out.append(
            f'<tr data-run="{f.run}" data-task="{esc(f.task)}" data-kind="{f.kind}" data-count="{f.count}">'
            f'<td class="run{r.index % 8}">{esc(r.label)}</td><td>{esc(f.task)}</td><td>{what}{detail}</td>'
            f"<td>{count}</td><td>{docs}{more}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _chance_note(comps: dict[int, Comparison]) -> str:
    m = sum(1 for c in comps.values() for d in c.deltas if d.p is not None)
    if m < 10:
        return ""
    return (
        f" With {m} tests, about {m / 20:.1f} fall below 0.05 by chance alone when nothing changed; "
        "read single stars with that in mind."
    )


def _hib(runs: list[Run], task: str) -> dict[str, bool]:
    for r in runs:
        h = r.results.higher_is_better.get(task)
        if isinstance(h, dict):
            return {k: bool(v) for k, v in h.items() if isinstance(v, bool)}
    return {}


def _header(runs: list[Run], base: Run, title: str, n_findings: int, formats: bool) -> str:
    """The page's title, its section links and the runs' legend."""
    nav = [("scores", "Scores"), ("provenance", "Provenance"), ("results", "Results")]
    if has_contamination(runs):
        nav.append(("contamination", "Contamination"))
    if len(runs) > 1:
        nav.append(("comparison", "Comparison"))
    nav.append(("samples", "Samples"))
    if formats:
        nav.append(("formats", "Formats"))
    nav += [("plans", "Plans"), ("diagnostics", f"Diagnostics ({n_findings})")]
    legend = "".join(
        f'<span class="legend run{r.index % 8}"><i></i>{esc(r.label)}'
        + (" (baseline)" if r.index == base.index else "")
        + "</span>"
        for r in runs
    )
    return (
        f"<header><h1>{esc(title)}</h1><nav>"
        + " · ".join(f'<a href="#{k}">{esc(v)}</a>' for k, v in nav)
        + f"</nav><div class=legends>{legend}</div></header>"
    )


def build_report(dirs: list[str], baseline: str | None = None, title: str | None = None) -> str:
    """The report page for the scored results directories ``dirs`` (``baseline``: default the first)."""
    runs, base = load_runs(dirs, baseline)
    comps: dict[int, Comparison] = {}
    if len(runs) > 1:
        for r in runs:
            if r.index != base.index:
                try:
                    comps[r.index] = compare(base.path, r.path)
                except ScoreError as e:
                    raise ReportError(str(e)) from None
    with reraised_as(ReportError):
        plans_html = plans_section(runs, base)
    findings = [f for r in runs for f in run_findings(r)]
    formats_html = formats_section(run_format_views(runs))
    tasks = task_order(runs)
    payloads = [task_payload(t, runs, _hib(runs, t)) for t in tasks]
    meta: dict[str, Any] = {
        "generator": GENERATOR,
        "baseline": base.index,
        "runs": [{"index": r.index, "label": r.label, "plan_hash": r.plan_hash} for r in runs],
        "tasks": [{"name": p["task"], "n": len(p["ids"]), "output_type": p["output_type"]} for p in payloads],
        "ll_digits": LL_DIGITS,
    }
    title = title or "lmeval report: " + ", ".join(r.label for r in runs)
    body = [
        _header(runs, base, title, len(findings), bool(formats_html)),
        scores_section(runs, base, comps),  # the first screen: the scores; provenance, configs, prompts follow
        '<section id="provenance"><h2>Provenance</h2>' + provenance_table(runs, base.index) + "</section>",
        '<section id="results"><h2>Results</h2>'
        + results_table(runs, "results", "Tasks")
        + results_table(runs, "groups", "Groups")
        + interval_table(runs)
        + '<h3>Per task, with 95% intervals (value ± 1.96 stderr)</h3><div class="charts">'
        + charts(runs)
        + "</div></section>",
    ]
    if has_contamination(runs):
        body.append(contamination_section(runs))
    if len(runs) > 1:
        body.append(
            '<section id="comparison"><h2>Comparison with the baseline</h2>'
            f"<p>Baseline: <b>{esc(base.label)}</b>. Δ = run − baseline; ± is the standard error of the paired "
            "per-document differences, p the two-sided normal p-value (as <code>lmeval compare</code>, with its "
            "McNemar or bootstrap p, 95% interval and minimum detectable effect at 80% power, MDE); "
            "* and colour: p &lt; 0.05. ▲/▼: documents that flipped to right/wrong."
            + _chance_note(comps)
            + "</p>"
            + comparison_matrix(runs, base, comps)
            + "</section>"
        )
    body.append(
        '<section id="samples"><h2>Samples</h2><div id="browser" class="browser">'
        "<noscript>The sample browser needs JavaScript (no network is used).</noscript></div></section>"
    )
    if formats_html:
        body.append(formats_html)
    body.append('<section id="plans"><h2>Plans</h2>' + plans_html + "</section>")
    body.append('<section id="diagnostics"><h2>Diagnostics</h2>' + _findings_table(findings, runs) + "</section>")
    data = [json_script("lmeval-meta", meta)]
    data += [json_script(f"lmeval-task-{i}", p) for i, p in enumerate(payloads)]
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f'<meta name="generator" content="{GENERATOR}"><title>{esc(title)}</title>'
        f"<style>{_asset('report.css')}</style></head><body>\n"
        + "\n".join(body)
        + "\n"
        + "\n".join(data)
        + f"\n<script>{_asset('report.js')}</script>\n</body></html>\n"
    )
    return page


def write_report(dirs: list[str], out: str | os.PathLike[str], baseline: str | None = None) -> Path:
    """Build the page and write it atomically to ``out``; returns the path."""
    page = build_report(dirs, baseline).encode("utf-8")
    path = Path(out)
    if path.is_dir():
        raise ReportError(f"{out}: is a directory; give a file name (-o report.html)")
    try:
        write_atomic(path, lambda f: f.write(page))
    except OSError as e:
        raise ReportError(f"{out}: cannot write ({e.strerror})") from None
    return path
