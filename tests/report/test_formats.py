"""The report's Formats section (#38): one arc_easy document (real data) compiled as cf, mcf and gen, each
format's prompt and requests from the plan and, after a tiny-model run, the log-likelihoods, generation and
winning choice read from the result rows; escaped; absent when every task is in one format."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from lmeval.plans import read_results
from lmeval.report.build import build_report, load_runs
from lmeval.report.formatsection import formats_section, render_view
from lmeval.report.formatview import (
    CHOICE,
    GENERATION,
    UNCONDITIONAL,
    common_doc,
    format_families,
    format_views,
    run_format_views,
)
from lmeval.report.html import esc
from lmeval.report.inputs import read_plan_view

from .conftest import data_dir, lmeval

TASKS = ["arc_easy@cf", "arc_easy@mcf", "arc_easy@gen"]


@pytest.fixture(scope="module")
def three_formats(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """arc_easy in three formats, 4 documents, executed by the tiny model (hf backend) and scored."""
    base = tmp_path_factory.mktemp("formats")
    plan, out = base / "formats.msgpack", base / "formats"
    lmeval("compile", f"run.tasks=[{','.join(TASKS)}]", "run.limit=4", f"run.data_dir={data_dir()}", f"run.out={plan}")
    lmeval("execute", str(plan), "model.backend=hf", "--out", str(out), "--no-progress")
    lmeval("score", str(out), "--quiet", "--bootstrap-iters", "100")
    return {"plan": plan, "out": out}


def _doc(doc_id: int) -> dict[str, Any]:
    lines = (data_dir() / "arc_easy" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    return dict(json.loads(lines[doc_id]))


def _plan_view(plan: Path) -> Any:
    from lmeval.plans import read_header

    return read_plan_view(str(plan), read_header(plan).plan_hash)


def test_families_need_two_formats() -> None:
    names = ["arith", "arc_easy@gen", "mmlu_anatomy@mcf", "arc_easy", "arc_easy@cf", "piqa@best"]
    assert format_families(names) == {"arc_easy": ["arc_easy", "arc_easy@cf", "arc_easy@gen"]}
    assert format_families(["arc_easy", "arith", "mmlu_anatomy@mcf"]) == {}


def test_the_plan_alone_shows_every_format_of_one_document(three_formats: dict[str, Path]) -> None:
    plan = _plan_view(three_formats["plan"])
    (view,) = format_views(plan, "formats.msgpack")
    assert (view.base, view.doc_id) == ("arc_easy", 0)
    assert [b.task for b in view.blocks] == TASKS and [b.fmt for b in view.blocks] == ["cf", "mcf", "gen"]
    assert [b.metric for b in view.blocks] == ["acc_norm,none", "acc,none", "exact_match,letter"]
    doc = _doc(0)
    texts, gold = doc["choices"]["text"], doc["choices"]["label"].index(doc["answerKey"])
    cf, mcf, gen = view.blocks
    for b in view.blocks:
        assert b.outcome is None and b.gold == gold
        assert all(doc["question"] in r.context for r in b.requests if r.kind != UNCONDITIONAL)
    # cf: the choices' texts after the question, then acc_pmi's "Answer:" block, labelled apart
    chosen = [r for r in cf.requests if r.kind == CHOICE]
    uncond = [r for r in cf.requests if r.kind == UNCONDITIONAL]
    assert [r.continuation for r in chosen] == [" " + t for t in texts] and len(cf.requests) == 2 * len(texts)
    assert {(r.context, r.block) for r in uncond} == {("Answer:", "acc_pmi")}
    assert [r.choice for r in uncond] == list(range(len(texts))) and " A." not in chosen[0].context
    # mcf: the lettered choices in the prompt, scored as " A", " B", ...
    for label, text in zip(" ABCD", ["", *texts], strict=True):
        if text:
            assert f"\n {label}. {text}" in mcf.requests[0].context
    assert [r.continuation for r in mcf.requests] == [" A", " B", " C", " D"]
    (g,) = gen.requests
    assert g.kind == GENERATION and " A. " + texts[0] in g.context and g.until == ["\n\n", "Question:"]
    html = formats_section([view])
    assert html.count('<article class="fmt"') == 3 and "No results for this document" in html
    assert html.count(esc(doc["question"])) == 3 and "Unconditional requests for acc_pmi" in html


def test_smallest_common_document(three_formats: dict[str, Path]) -> None:
    plan = _plan_view(three_formats["plan"])
    assert common_doc(plan, TASKS) == 0
    del plan.tasks["arc_easy@mcf"][0]
    del plan.tasks["arc_easy@gen"][1]
    assert common_doc(plan, TASKS) == 2
    assert format_views(plan, "p")[0].doc_id == 2


def test_results_show_the_answers_and_the_winner(three_formats: dict[str, Path]) -> None:
    out = three_formats["out"]
    runs, _ = load_runs([str(out)])
    (view,) = run_format_views(runs)
    rows = read_results(out).filter(pl.col("doc_id") == view.doc_id)
    samples = pl.read_parquet(out / "samples.parquet").filter(pl.col("doc_id") == view.doc_id)
    texts = _doc(view.doc_id)["choices"]["text"]
    cf, mcf, gen = view.blocks
    for b, norm in ((cf, [len(t) for t in texts]), (mcf, [1] * len(texts))):
        ll = rows.filter(pl.col("task") == b.task).sort("idx")["loglikelihood"].to_list()
        assert [r.loglikelihood for r in b.requests] == ll  # cf: the choices, then the unconditional block
        k = len(texts)
        expect = int(np.argmax(np.array(ll[:k]) / np.array(norm, dtype=float)))
        assert [r.compared for r in b.requests[:k]] == [x / n for x, n in zip(ll[:k], norm, strict=True)]
        assert b.outcome is not None and b.outcome.predicted == expect
        name = b.metric.split(",")[0]
        score = samples.filter(pl.col("task") == b.task)[name].item()
        assert b.outcome.score == score and b.correct == (expect == b.gold) == (score == 1.0)
    g_row = rows.filter(pl.col("task") == "arc_easy@gen").row(0, named=True)
    g_sample = samples.filter(pl.col("task") == "arc_easy@gen").row(0, named=True)
    assert gen.requests[0].response == g_row["response"] and gen.outcome is not None
    assert gen.outcome.answer == g_sample["filtered"] and gen.outcome.score == g_sample["exact_match"]
    page = build_report([str(out)])
    assert '<a href="#formats">Formats</a>' in page and '<section id="formats">' in page
    section = page[page.index('<section id="formats">') : page.index('<section id="plans">')]
    assert section.count(esc(_doc(view.doc_id)["question"])) == 3
    assert f"{mcf.requests[0].loglikelihood:.6f}" in section
    assert esc(g_row["response"]) in section
    winner = next(r for r in mcf.requests if r.choice == mcf.outcome.predicted)  # type: ignore[union-attr]
    assert f'<tr data-idx="{winner.idx}" class="' in section and "◀ chosen" in section


def test_hostile_prompt_text_is_escaped(three_formats: dict[str, Path]) -> None:
    runs, _ = load_runs([str(three_formats["out"])])
    (view,) = run_format_views(runs)
    evil = "</pre><script>alert(1)</script>"
    b = view.blocks[1]
    reqs = [
        dataclasses.replace(r, context=evil + r.context, continuation=f" <img src=x>{r.choice}") for r in b.requests
    ]
    gen = view.blocks[2]
    greqs = [dataclasses.replace(r, response=evil, until=[evil]) for r in gen.requests]
    blocks = [
        view.blocks[0],
        dataclasses.replace(b, requests=reqs, choices=[evil] * 4),
        dataclasses.replace(gen, requests=greqs),
    ]
    html = render_view(dataclasses.replace(view, base=evil, blocks=blocks))
    assert "<script>" not in html and "<img" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4 and "&lt;img src=x&gt;" in html


def test_no_section_when_each_task_is_in_one_format(report_html: Path) -> None:
    page = report_html.read_text(encoding="utf-8")  # arc_easy and arith, as written, 0- and 3-shot
    assert 'id="formats"' not in page and "#formats" not in page
    assert formats_section([]) == ""
