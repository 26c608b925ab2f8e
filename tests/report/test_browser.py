"""The report page in a real headless browser (chromium): what it shows matches the run's files, the sample
browser's filters and pagination work, and the page makes no request beyond its own file."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from lmeval.diff import visible_lines
from lmeval.diff.runs import compare
from lmeval.plans.plan import InstanceRecord, PlanReader
from lmeval.plans.results import read_results
from lmeval.report.html import fmt

PAGE_SIZE = 20


@pytest.fixture(scope="module")
def page(browser: Any, report_html: Path) -> Any:
    browser.get_log("performance")  # drop what earlier pages logged
    browser.get(report_html.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    return browser


def _results(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "results.json").read_text(encoding="utf-8")))


def _select_task(page: Any, name: str) -> None:
    sel = Select(page.find_element(By.ID, "s-task"))
    for o in sel.options:
        if o.text.startswith(name + " "):
            sel.select_by_visible_text(o.text)
            return
    raise AssertionError(f"task {name} not in the sample browser")


def _set(page: Any, element_id: str, on: bool) -> None:
    box = page.find_element(By.ID, element_id)
    if box.is_selected() != on:
        box.click()


def _search(page: Any, text: str) -> None:
    box = page.find_element(By.ID, "s-search")
    box.clear()
    if text:
        box.send_keys(text)


def _matches(page: Any) -> int:
    return int(page.find_element(By.ID, "s-count").get_attribute("data-matches"))


def _shown(page: Any) -> list[int]:
    return [int(a.get_attribute("data-doc")) for a in page.find_elements(By.CSS_SELECTOR, "#s-docs article.doc")]


def test_no_script_errors(page: Any) -> None:
    severe = [e for e in page.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


def test_results_table_matches_results_json(page: Any, two_runs: dict[str, Any]) -> None:
    for i, run in enumerate((two_runs["a"], two_runs["b"])):
        res = _results(run)
        expected = {
            (task, key): v
            for task, m in res["results"].items()
            for key, v in m.items()
            if "," in key and "_stderr," not in key
        }
        cells = page.find_elements(By.CSS_SELECTOR, f'table.results[data-column="results"] td.value[data-run="{i}"]')
        got = {(c.get_attribute("data-task"), c.get_attribute("data-key")): c for c in cells}
        assert set(got) == set(expected)
        for (task, key), v in expected.items():
            cell = got[(task, key)]
            assert float(cell.get_attribute("data-value")) == v
            assert cell.text == fmt(v)
            metric, _, filt = key.partition(",")
            se = res["results"][task][f"{metric}_stderr,{filt}"]
            se_cell = page.find_element(By.CSS_SELECTOR, f'td.se[data-run="{i}"][data-task="{task}"][data-key="{key}"]')
            assert se_cell.text == fmt(se)
    # n-shot column shows both settings side by side
    row = page.find_element(By.CSS_SELECTOR, 'table.results tr.first[data-task="arc_easy"]')
    assert "0 / 3" in row.text


def test_chart_bars_match_values(page: Any, two_runs: dict[str, Any]) -> None:
    runs = [_results(two_runs["a"]), _results(two_runs["b"])]
    bars = page.find_elements(By.CSS_SELECTOR, "svg.chart rect.bar")
    assert len(bars) == sum(
        1 for r in runs for m in r["results"].values() for k in m if "," in k and "_stderr," not in k
    )
    for bar in bars:
        svg = bar.find_element(By.XPATH, "./ancestor::*[local-name()='svg']")
        task, key = svg.get_attribute("data-task"), bar.get_attribute("data-key")
        run = int(bar.get_attribute("data-run"))
        value = runs[run]["results"][task][key]
        assert float(bar.get_attribute("data-value")) == value
        lo, hi = float(svg.get_attribute("data-lo")), float(svg.get_attribute("data-hi"))
        plot_h = float(svg.get_attribute("data-plot-height"))
        # the height the browser lays out, in CSS pixels (the SVG is drawn 1:1)
        height = page.execute_script("return arguments[0].getBoundingClientRect().height", bar)
        assert height == pytest.approx(plot_h * abs(value) / (hi - lo), abs=0.6)
        # the 95% interval whisker spans value ± 1.96 stderr
        metric, _, filt = key.partition(",")
        se = runs[run]["results"][task][f"{metric}_stderr,{filt}"]
        ci = svg.find_elements(By.CSS_SELECTOR, f'path.ci[data-run="{run}"][data-key="{key}"]')
        if se > 0:
            assert len(ci) == 1
            assert float(ci[0].get_attribute("data-ci-hi")) == pytest.approx(value + 1.959964 * se)
            box = page.execute_script("return arguments[0].getBoundingClientRect().height", ci[0])
            span = min(value + 1.959964 * se, hi) - max(value - 1.959964 * se, lo)
            assert box == pytest.approx(plot_h * span / (hi - lo), abs=1.5)
        else:
            assert ci == []


def test_comparison_matrix_is_lmeval_compare(page: Any, two_runs: dict[str, Any]) -> None:
    c = compare(str(two_runs["a"]), str(two_runs["b"]))
    cells = page.find_elements(By.CSS_SELECTOR, "#comparison table.matrix td.cmp[data-delta]")
    got = {(x.get_attribute("data-task"), x.get_attribute("data-key")): x for x in cells}
    assert len(got) == len(c.deltas)
    for d in c.deltas:
        cell = got[(d.task, f"{d.metric},{d.filter}")]
        assert float(cell.get_attribute("data-delta")) == d.delta
        assert cell.get_attribute("data-p") == ("" if d.p is None else repr(d.p))
        assert f"{d.delta:+.4f}" in cell.text
        ups = sum(1 for f in c.flips if (f.task, f.metric, f.filter) == (d.task, d.metric, d.filter) and f.b > f.a)
        downs = sum(1 for f in c.flips if (f.task, f.metric, f.filter) == (d.task, d.metric, d.filter) and f.b < f.a)
        if ups or downs:
            assert f"▲{ups} ▼{downs}" in cell.text


def test_plan_diff_names_the_few_shot_change(page: Any) -> None:
    diff = page.find_element(By.CSS_SELECTOR, "#plans .plandiff")
    assert "differ:" in diff.find_element(By.CSS_SELECTOR, "p.summary").text
    row = diff.find_element(By.CSS_SELECTOR, 'table.difftasks tr[data-task="arc_easy"]')
    assert "few-shot selection" in row.text
    assert diff.find_elements(By.CSS_SELECTOR, "details pre.udiff")


def _wrong_and_flipped(two_runs: dict[str, Any], task: str, metric: str) -> tuple[set[int], set[int]]:
    a = pl.read_parquet(two_runs["a"] / "samples.parquet").filter(pl.col("task") == task)
    b = pl.read_parquet(two_runs["b"] / "samples.parquet").filter(pl.col("task") == task)
    va = dict(zip(a["doc_id"].to_list(), a[metric].to_list(), strict=True))
    vb = dict(zip(b["doc_id"].to_list(), b[metric].to_list(), strict=True))
    wrong = {d for d in va if va[d] < 1 or vb[d] < 1}
    flipped = {d for d in va if va[d] != vb[d]}
    return wrong, flipped


def test_sample_pagination(page: Any) -> None:
    _select_task(page, "arc_easy")
    _set(page, "s-wrong", False)
    _set(page, "s-flipped", False)
    _search(page, "")
    n = _matches(page)
    assert n == 30
    assert page.find_element(By.ID, "s-page").text == "page 1 of 2"
    first = _shown(page)
    assert first == list(range(PAGE_SIZE))
    assert not page.find_element(By.ID, "s-prev").is_enabled()
    page.find_element(By.ID, "s-next").click()
    assert page.find_element(By.ID, "s-page").text == "page 2 of 2"
    assert _shown(page) == list(range(PAGE_SIZE, 30))
    assert not page.find_element(By.ID, "s-next").is_enabled()
    page.find_element(By.ID, "s-prev").click()
    assert _shown(page) == first


def test_sample_filters(page: Any, two_runs: dict[str, Any]) -> None:
    wrong, flipped = _wrong_and_flipped(two_runs, "arc_easy", "acc")
    assert wrong and flipped and len(wrong) < 30  # the data make both filters bite
    _select_task(page, "arc_easy")
    _search(page, "")
    _set(page, "s-flipped", False)
    _set(page, "s-wrong", True)
    assert _matches(page) == len(wrong)
    assert set(_shown(page)) == set(sorted(wrong)[:PAGE_SIZE])
    _set(page, "s-wrong", False)
    _set(page, "s-flipped", True)
    assert _matches(page) == len(flipped)
    assert set(_shown(page)) == set(sorted(flipped)[:PAGE_SIZE])
    for art in page.find_elements(By.CSS_SELECTOR, "#s-docs article.doc"):
        scores = {s.get_attribute("data-value") for s in art.find_elements(By.CSS_SELECTOR, ".score")}
        assert len(scores) == 2
    _set(page, "s-wrong", True)
    assert _matches(page) == len(wrong & flipped)
    _set(page, "s-wrong", False)
    _set(page, "s-flipped", False)


def test_sample_search(page: Any, two_runs: dict[str, Any]) -> None:
    with PlanReader(two_runs["plan_a"]) as r:
        ctx = {
            rec.doc_id: rec.context
            for rec in r
            if isinstance(rec, InstanceRecord) and rec.task == "arc_easy" and rec.idx == 0
        }
    word = max(ctx[7].split(), key=len).lower()
    expected = sorted(d for d, c in ctx.items() if word in c.lower())
    _select_task(page, "arc_easy")
    _search(page, word.upper())  # case-insensitive
    hits = _shown(page)
    assert 7 in hits and set(expected) <= set(hits)
    _search(page, "doc:12")
    assert _shown(page) == [12]
    _search(page, "no such text anywhere 1234567")
    assert _matches(page) == 0
    _search(page, "")


def _unvisible(text: str) -> str:
    return text.replace("↵\n", "\n").replace("↵", "\n").replace("␣", " ").replace("→", "\t")


def test_prompt_is_the_exact_plan_context(page: Any, two_runs: dict[str, Any]) -> None:
    with PlanReader(two_runs["plan_b"]) as r:
        insts = [rec for rec in r if isinstance(rec, InstanceRecord) and rec.task == "arc_easy" and rec.doc_id == 3]
    _select_task(page, "arc_easy")
    _search(page, "doc:3")
    art = page.find_element(By.CSS_SELECTOR, '#s-docs article.doc[data-doc="3"]')
    boxes = art.find_elements(By.CSS_SELECTOR, ".promptbox")
    assert len(boxes) == 2  # 0-shot and 3-shot prompts differ
    shown = page.execute_script(
        "var b = arguments[0]; return Array.from(b.querySelectorAll('pre.prompt')).map(p => p.textContent);", boxes[1]
    )
    assert _unvisible("".join(shown)) == insts[0].context
    conts = [td.get_attribute("textContent") for td in art.find_elements(By.CSS_SELECTOR, "table.choices td.choice")]
    assert [_unvisible(c) for c in conts] == [i.continuation for i in insts]
    # log-likelihoods per choice and run, as the result rows hold them
    rows = read_results(two_runs["b"]).filter((pl.col("task") == "arc_easy") & (pl.col("doc_id") == 3)).sort("idx")
    cells = art.find_elements(By.CSS_SELECTOR, 'table.choices td[data-run="1"]')
    assert [float(c.text.split()[0]) for c in cells] == [round(x, 6) for x in rows["loglikelihood"].to_list()]
    _search(page, "")


def test_generation_samples_show_responses(page: Any, two_runs: dict[str, Any]) -> None:
    s = pl.read_parquet(two_runs["a"] / "samples.parquet").filter(pl.col("task") == "arith").sort("doc_id")
    _select_task(page, "arith")
    _search(page, "doc:0")
    art = page.find_element(By.CSS_SELECTOR, '#s-docs article.doc[data-doc="0"]')
    assert len(art.find_elements(By.CSS_SELECTOR, "pre.response")) == 2
    filtered = art.find_elements(By.CSS_SELECTOR, "code.filtered")
    assert _unvisible(filtered[0].get_attribute("textContent")) == s["filtered"][0]
    _search(page, "")


def test_visible_whitespace_is_lmeval_diffs(page: Any) -> None:
    cases = ["a  b \n", "\tx\r\n", "  indented  twice  \n\nend ", "no\u00a0break", "", "\n\n"]
    got = page.execute_script("return arguments[0].map(s => window.lmevalVisible.lines(s));", cases)
    assert got == [visible_lines(c) for c in cases]


def test_diagnostic_links_open_the_document(page: Any) -> None:
    links = page.find_elements(By.CSS_SELECTOR, "#diagnostics a.doclink")
    assert links, "the fake backend stops some generations at max_gen_toks: there must be findings"
    task, doc = links[0].get_attribute("data-task"), int(links[0].get_attribute("data-doc"))
    links[0].click()
    page.execute_script("window.dispatchEvent(new HashChangeEvent('hashchange'))")
    assert _shown(page) == [doc]
    assert Select(page.find_element(By.ID, "s-task")).first_selected_option.text.startswith(task + " ")
    _search(page, "")


def test_no_request_leaves_the_page(page: Any, report_html: Path, artifacts: Path) -> None:
    # exercise the page first: every task, every page, the prefix and sample details opened
    for i in range(len(Select(page.find_element(By.ID, "s-task")).options)):
        Select(page.find_element(By.ID, "s-task")).select_by_index(i)
        for d in page.find_elements(By.CSS_SELECTOR, "details"):
            page.execute_script("arguments[0].open = true", d)
    url = report_html.resolve().as_uri()
    requests = []
    for entry in page.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated"):
            requests.append(msg["params"].get("request", {}).get("url") or msg["params"].get("url"))
    assert requests and all(u == url or u.startswith(url + "#") for u in requests), requests
    assert page.execute_script("return performance.getEntriesByType('resource').length") == 0


def test_screenshot(page: Any, artifacts: Path) -> None:
    page.execute_script("window.scrollTo(0, 0)")
    height = page.execute_script("return document.body.scrollHeight")
    page.set_window_size(1400, min(int(height) + 50, 4000))
    path = artifacts / "report.png"
    assert page.save_screenshot(str(path))
    page.find_element(By.ID, "samples").location_once_scrolled_into_view  # noqa: B018
    assert page.save_screenshot(str(artifacts / "report-samples.png"))
    page.set_window_size(1400, 1000)
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 1000 and height >= 1000
    assert len(png) > 100_000  # a page of text, tables and charts, not a blank canvas
    print(f"screenshots: {path}")


def _argmax(xs: list[float]) -> int:
    return max(range(len(xs)), key=lambda i: (xs[i], -i))  # the first of equal maxima, as the page picks


def test_gold_and_argmax_marks_per_run(page: Any, two_runs: dict[str, Any]) -> None:
    """Every arc_easy document: the ★ row is the plan's target, and each run's bold (argmax) cell is at that
    run's highest log-likelihood in its result rows; documents where the runs' argmax differ, and golds at
    the first and at the last choice, are among them (so a mark taken from the wrong run or off by one
    shows)."""
    with PlanReader(two_runs["plan_a"]) as r:
        docs = {rec.doc_id: rec for rec in r if not isinstance(rec, InstanceRecord) and rec.task == "arc_easy"}
    lls = []
    for run in (two_runs["a"], two_runs["b"]):
        rows = read_results(run).filter(pl.col("task") == "arc_easy").sort(["doc_id", "idx"])
        per: dict[int, list[float]] = {}
        for d, ll in zip(rows["doc_id"].to_list(), rows["loglikelihood"].to_list(), strict=True):
            per.setdefault(d, []).append(ll)
        lls.append(per)
    golds = {d: int(rec.target) for d, rec in docs.items()}
    assert any(_argmax(lls[0][d]) != _argmax(lls[1][d]) for d in docs)  # the data make the per-run mark bite
    assert 0 in golds.values() and any(g == len(docs[d].choices) - 1 and g > 0 for d, g in golds.items())
    _select_task(page, "arc_easy")
    _set(page, "s-wrong", False)
    _set(page, "s-flipped", False)
    for d in sorted(docs):
        _search(page, f"doc:{d}")
        art = page.find_element(By.CSS_SELECTOR, f'#s-docs article.doc[data-doc="{d}"]')
        rows = art.find_elements(By.CSS_SELECTOR, "table.choices tr")[1:]  # after the header
        assert len(rows) == len(docs[d].choices)
        marks = [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows]
        gold_rows = [i for i, r in enumerate(rows) if "gold" in (r.get_attribute("class") or "").split()]
        assert gold_rows == [golds[d]] and marks[golds[d]] == "★", (d, marks)
        assert [m for i, m in enumerate(marks) if i != golds[d]] == [str(i) for i in range(len(rows)) if i != golds[d]]
        for run in (0, 1):
            cells = art.find_elements(By.CSS_SELECTOR, f'table.choices td[data-run="{run}"]')
            best = [i for i, c in enumerate(cells) if "best" in (c.get_attribute("class") or "").split()]
            assert best == [_argmax(lls[run][d])], (d, run, best)
            assert cells[best[0]].value_of_css_property("font-weight") in ("700", "bold"), (d, run)
    _search(page, "")


def test_provenance_highlights_exactly_the_rows_that_differ(page: Any) -> None:
    """A row is marked (and coloured) when its cells differ between the runs, except the rows that always
    differ (results directory, start and finish times); the 0-shot and 3-shot runs differ in plan and
    compile settings and agree on model and backend."""
    rows = page.find_elements(By.CSS_SELECTOR, "table.prov tbody tr")
    seen: dict[str, bool] = {}
    colour: dict[bool, set[str]] = {True: set(), False: set()}
    for tr in rows:
        th = tr.find_element(By.TAG_NAME, "th")
        key = th.text
        cells = [td.get_attribute("innerHTML") for td in tr.find_elements(By.TAG_NAME, "td")]
        assert len(cells) == 2, key
        marked = "differs" in (tr.get_attribute("class") or "").split()
        should = len(set(cells)) > 1 and key not in ("results directory", "started", "finished")
        assert marked == should, (key, cells)
        seen[key] = marked
        colour[marked].add(th.value_of_css_property("color"))
    assert seen["plan hash"] and seen["compile settings"] and seen["plan file"]
    assert not seen["model"] and not seen["backend"] and not seen["tokenizer sha256"]
    assert len(colour[True]) == 1 and colour[True].isdisjoint(colour[False]), colour  # visibly highlighted
