"""The Formats section: one document of each task compiled in several prompt formats, every format's
prompt and requests one after the other, with the model's log-likelihoods or generation and the winning
choice when there are results (the records: ``report/formatview.py``). Every text is HTML-escaped."""

from __future__ import annotations

import json
import math

from lmeval.report.formatview import CHOICE, GENERATION, OTHER, UNCONDITIONAL, FormatBlock, FormatRequest, FormatView
from lmeval.report.html import esc
from lmeval.report.samples import LL_DIGITS

MAX_VIEWS = 20  # task families shown (mmlu in three formats is 57 of them); the rest are counted


def _quoted(s: str | None) -> str:
    """A continuation or stop sequence with its whitespace visible: as a JSON string, escaped."""
    return "" if s is None else f"<code>{esc(json.dumps(s, ensure_ascii=False))}</code>"


def _n(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.{LL_DIGITS}f}" if math.isfinite(x) else str(x)


def _choice_text(b: FormatBlock, i: int | None) -> str:
    if i is None:
        return "none"
    text = b.choices[i] if b.choices is not None and 0 <= i < len(b.choices) else ""
    return f"{i}" + (f" ({esc(text)})" if text else "")


def _outcome(b: FormatBlock) -> str:
    if b.outcome is None:
        return '<p class="dim">No results for this document: the plan\'s requests only.</p>'
    o, right = b.outcome, b.correct
    verdict = (
        ""
        if right is None
        else ('<span class="score ok">right</span>' if right else '<span class="score bad">wrong</span>')
    )
    name = b.metric.partition(",")[0]
    score = "" if o.score is None else f" <span class=dim>({esc(name)} = {o.score:g})</span>"
    answer = f"extracted answer {_quoted(o.answer)}, " if b.output_type == "generate_until" else ""
    return (
        f'<p class="fmtoutcome">{answer}chosen: <b>{_choice_text(b, o.predicted)}</b>, gold: '
        f"{_choice_text(b, b.gold)} {verdict}{score}</p>"
    )


def _choices_table(b: FormatBlock, reqs: list[FormatRequest], shared: bool, compared: bool) -> str:
    name = esc(b.metric.partition(",")[0])
    chosen = b.outcome.predicted if b.outcome is not None else None
    head = "<th>Choice</th>" + ("" if shared else "<th>Context</th>") + "<th>Continuation</th>"
    head += "<th>log-likelihood</th>" + (f"<th>{name} compares</th>" if compared else "")
    out = [f'<table class="choices fmtchoices"><thead><tr>{head}</tr></thead><tbody>']
    for r in reqs:
        cls = " ".join(c for c in ("gold" if r.choice == b.gold else "", "chosen" if r.choice == chosen else "") if c)
        marks = (" ★" if r.choice == b.gold else "") + (" ◀ chosen" if r.choice == chosen and r.kind == CHOICE else "")
        ctx = "" if shared else f'<td><pre class="prompt">{esc(r.context)}</pre></td>'
        out.append(
            f'<tr data-idx="{r.idx}"' + (f' class="{cls}"' if cls and r.kind == CHOICE else "") + ">"
            f"<td>{'' if r.choice is None else r.choice}{marks if r.kind == CHOICE else ''}</td>{ctx}"
            f'<td class="choice">{_quoted(r.continuation)}</td><td class="ll">{_n(r.loglikelihood)}</td>'
            + (f'<td class="cmp">{_n(r.compared)}</td>' if compared else "")
            + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _loglikelihood_block(b: FormatBlock) -> str:
    choices = [r for r in b.requests if r.kind == CHOICE]
    out = []
    shared = bool(choices) and all(r.context == choices[0].context for r in choices)
    if shared:
        out.append(f'<pre class="prompt">{esc(choices[0].context)}</pre>')
    if choices:
        compared = b.metric.partition(",")[0] != "acc" and any(r.compared is not None for r in choices)
        out.append(_choices_table(b, choices, shared, compared))
    blocks: dict[str, list[FormatRequest]] = {}
    for r in b.requests:
        if r.kind == UNCONDITIONAL and r.block is not None:
            blocks.setdefault(r.block, []).append(r)
    for metric, reqs in blocks.items():
        ctxs = sorted({r.context for r in reqs})
        out.append(
            f'<details class="uncond"><summary>Unconditional requests for {esc(metric)}: {len(reqs)}, context '
            f"{' '.join(_quoted(c) for c in ctxs)} (not choices: {esc(metric)} subtracts them)</summary>"
            + _choices_table(b, reqs, len(ctxs) == 1, False)
            + "</details>"
        )
    others = [r for r in b.requests if r.kind == OTHER]
    if others:
        out.append("<p class=dim>Other requests:</p>" + _choices_table(b, others, False, False))
    return "".join(out)


def _generation_block(b: FormatBlock) -> str:
    out = []
    for r in b.requests:
        if r.kind != GENERATION:
            continue
        until = ", ".join(_quoted(u) for u in r.until or []) or "<span class=dim>(none)</span>"
        out.append(f'<pre class="prompt">{esc(r.context)}</pre><p>until: {until}</p>')
        if r.response is not None:
            out.append(f'<p class="dim">Generated:</p><pre class="response">{esc(r.response)}</pre>')
    return "".join(out)


def render_block(b: FormatBlock) -> str:
    fmt = esc(b.fmt) if b.fmt is not None else "as written"
    body = _generation_block(b) if b.output_type == "generate_until" else _loglikelihood_block(b)
    return (
        f'<article class="fmt" data-task="{esc(b.task)}" data-format="{esc(b.fmt or "")}">'
        f'<h4>{esc(b.task)} <span class="tag">{fmt}</span> <span class="dim">compared by '
        f"<code>{esc(b.metric)}</code></span></h4>{body}{_outcome(b)}</article>"
    )


def render_view(v: FormatView) -> str:
    return (
        f'<div class="fmtdoc" data-base="{esc(v.base)}" data-doc="{v.doc_id}">'
        f'<h3>{esc(v.base)}, doc {v.doc_id} <span class="dim">in {len(v.blocks)} formats, from '
        f"{esc(v.source)}</span></h3>"
        '<div class="fmtgrid">' + "".join(render_block(b) for b in v.blocks) + "</div></div>"
    )


def formats_section(views: list[FormatView]) -> str:
    """The section's HTML (empty when no task is in two or more formats)."""
    if not views:
        return ""
    shown = views[:MAX_VIEWS]
    more = len(views) - len(shown)
    return (
        '<section id="formats"><h2>One document in every format</h2>'
        "<p>Each task compiled in several prompt formats, at the smallest document id all of them hold: every "
        "format's prompt and requests as the plan has them (continuations and stop sequences as JSON strings, "
        "whitespace visible), and with results the model's log-likelihoods or generation, the choice the "
        "format's comparison metric (<code>format.metric</code>) picks (◀) and the gold (★).</p>"
        + "".join(render_view(v) for v in shown)
        + (f"<p class=dim>{more} more tasks in several formats are not shown.</p>" if more else "")
        + "</section>"
    )
