"""Clean vs all side by side (#29): ARC-Easy test questions from ../shared/data planted into filler text are
found by ``lmeval contamination``; ``lmeval score --exclude`` keeps the clean score in ``results`` and the
score on all documents in results.json's ``contamination`` field (plans/scored/clean.py); the score's table,
``lmeval report``'s table and the HTML page (in chromium) show both, the documents excluded and the Δ."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from lmeval.plans.plan import read_plan
from lmeval.plans.scored import read_scored
from lmeval.report.html import fmt
from tests.report.conftest import LIMIT, lmeval, pipeline
from tests.support import jsonl_rows


@pytest.fixture(scope="module")
def contaminated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("clean-vs-all")
    run = pipeline(base, "arc", "+task=[arc_easy]", f"run.limit={LIMIT}", "run.num_fewshot=0")
    full = json.loads((run / "results.json").read_text(encoding="utf-8"))  # scored on all documents
    plan = base / "arc.msgpack"
    arc = {r["id"]: r["question"] for r in jsonl_rows("arc_easy", "test")}
    docs = {d.doc_id: arc[d.doc["id"]] for d in read_plan(plan).docs}
    planted = [i for i, q in sorted(docs.items()) if len(q.split()) >= 16][:4]  # long enough for 13-grams
    filler = "\n".join(r["passage"] for r in jsonl_rows("boolq", "validation", limit=20))
    corpus = base / "corpus.txt"
    corpus.write_text(filler + "\n" + "\n".join(f"seen online: {docs[i]}" for i in planted) + "\n" + filler + "\n")
    report = base / "contamination"
    lmeval("contamination", str(plan), "--corpus", str(corpus), "-o", str(report))
    scored = lmeval("score", str(run), "--exclude", str(report), "--bootstrap-iters", "1000")
    printed = lmeval("report", str(run), "-o", str(base / "report.html"))
    return {"base": base, "run": run, "full": full, "planted": planted, "report": report, "score_out": scored,
            "report_out": printed, "html": base / "report.html"}  # fmt: skip


def _values(results: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in results["arc_easy"].items() if "," in k and "_stderr," not in k}


def test_results_json_holds_clean_and_all(contaminated: dict[str, Any]) -> None:
    run = read_scored(contaminated["run"], samples=False).results
    c = run.contamination
    assert c is not None and c.version == 1 and c.report == str(contaminated["report"])
    assert c.excluded == {"arc_easy": contaminated["planted"]} and len(contaminated["planted"]) == 4
    assert c.all == contaminated["full"]["results"]  # the score on all documents, as a plain score gives it
    assert run.results["arc_easy"]["sample_len"] == LIMIT - 4 and c.all["arc_easy"]["sample_len"] == LIMIT
    assert _values(contaminated["full"]["results"]) != {} and run.n_samples["arc_easy"]["effective"] == LIMIT - 4


def _table_lines(out: str) -> dict[str, str]:
    """The clean-vs-all table's rows by metric (the rows that name an n-of-N exclusion)."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip()[1:-1].split("│")]
        if len(cells) == 7 and " of " in cells[5]:
            rows[cells[2]] = line
    return rows


@pytest.mark.parametrize("printed", ["score_out", "report_out"])
def test_cli_tables_show_all_clean_excluded_and_delta(contaminated: dict[str, Any], printed: str) -> None:
    clean = _values(json.loads((contaminated["run"] / "results.json").read_text())["results"])
    full = _values(contaminated["full"]["results"])
    rows = _table_lines(contaminated[printed])
    assert set(rows) == {k.partition(",")[0] for k in full}
    for key, a in full.items():
        cells = [c.strip() for c in rows[key.partition(",")[0]].strip()[1:-1].split("│")]
        b = clean[key]
        assert cells[3:] == [f"{a:.4f}", f"{b:.4f}", f"4 of {LIMIT}", f"{b - a:+.4f}"], cells


@pytest.fixture(scope="module")
def page(browser: Any, contaminated: dict[str, Any]) -> Any:
    browser.get(contaminated["html"].resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    return browser


def test_page_shows_clean_vs_all(page: Any, contaminated: dict[str, Any]) -> None:
    assert [e for e in page.get_log("browser") if e["level"] == "SEVERE"] == []
    section = page.find_element(By.ID, "contamination")
    assert section.is_displayed() and str(contaminated["report"]) in section.text
    assert "4 document(s) excluded in 1 task(s)" in section.text
    link = page.find_element(By.CSS_SELECTOR, 'nav a[href="#contamination"]')
    assert link.is_displayed()
    clean = _values(json.loads((contaminated["run"] / "results.json").read_text())["results"])
    full = _values(contaminated["full"]["results"])
    rows = page.find_elements(By.CSS_SELECTOR, "table.clean tbody tr")
    assert {r.get_attribute("data-key") for r in rows} == set(full)
    for r in rows:
        key = r.get_attribute("data-key")
        a, b = full[key], clean[key]
        cell = {c: r.find_element(By.CSS_SELECTOR, f"td.{c}") for c in ("all", "clean", "excluded", "delta")}
        assert float(cell["all"].get_attribute("data-value")) == a and cell["all"].text == fmt(a)
        assert float(cell["clean"].get_attribute("data-value")) == b and cell["clean"].text == fmt(b)
        assert cell["excluded"].text == f"4 of {LIMIT}"
        assert cell["delta"].text == f"{b - a:+.4f}"
        assert cell["all"].is_displayed()
    # the Results table above is the clean subset
    value = page.find_element(By.CSS_SELECTOR, 'table.results td.value[data-task="arc_easy"][data-key="acc,none"]')
    assert float(value.get_attribute("data-value")) == clean["acc,none"]


def test_a_plain_run_has_no_contamination_section(contaminated: dict[str, Any]) -> None:
    plain = contaminated["base"] / "plain"
    shutil.copytree(contaminated["run"], plain)
    lmeval("score", str(plain), "--quiet", "--bootstrap-iters", "1000")
    out = lmeval("report", str(plain), "-o", str(contaminated["base"] / "plain.html"))
    html = (contaminated["base"] / "plain.html").read_text(encoding="utf-8")
    assert 'id="contamination"' not in html and _table_lines(out) == {}
    assert read_scored(plain, samples=False).results.contamination is None


def test_a_malformed_contamination_field_is_one_line(contaminated: dict[str, Any], capsys: Any) -> None:
    from lmeval.cli import main

    bad = contaminated["base"] / "bad"
    shutil.copytree(contaminated["run"], bad)
    doc = json.loads((bad / "results.json").read_text())
    doc["contamination"]["version"] = 2
    (bad / "results.json").write_text(json.dumps(doc))
    assert main(["report", str(bad), "-o", str(contaminated["base"] / "bad.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field contamination.version: 2; this lmeval reads 1" in err
