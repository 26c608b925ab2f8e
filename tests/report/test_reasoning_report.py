"""The report's sample browser for a run scored with ``run.reasoning``: reasoning (with its length) and
answer shown apart, the whole response one click away; without the setting the response shows as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from selenium.webdriver.common.by import By

from lmeval.plans.scored.files import read_scored
from lmeval.report import write_report
from lmeval.scorer.score import score_run
from tests.scorer.test_reasoning import THINK, _compile, _results, thinking


def test_sample_browser_shows_reasoning_and_answer(browser: Any, tmp_path: Path) -> None:
    plain = _results(_compile(tmp_path, "plain"), tmp_path / "plain", thinking)
    think = _results(_compile(tmp_path, "think", THINK), tmp_path / "think", thinking)
    for d in (plain, think):
        score_run(str(d), console=False)
    html = write_report([str(plain), str(think)], tmp_path / "report.html")
    browser.get(html.resolve().as_uri())
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    art = browser.find_element(By.CSS_SELECTOR, '#s-docs article.doc[data-doc="0"]')
    resps = art.find_elements(By.CSS_SELECTOR, "div.resp")
    assert len(resps) == 2
    # run 0 (no setting): the whole response, no split
    assert resps[0].find_elements(By.CSS_SELECTOR, "details.reasoning") == []
    assert len(resps[0].find_elements(By.CSS_SELECTOR, "pre.response")) == 1
    # run 1: reasoning (closed, with its length in chars), the answer, the whole response in a details
    s = read_scored(think).samples.filter(pl.col("doc_id") == 0).row(0, named=True)
    summary = resps[1].find_element(By.CSS_SELECTOR, "details.reasoning summary").get_attribute("textContent")
    assert summary == f"reasoning ({s['reasoning_chars']} chars)"
    answer = resps[1].find_element(By.CSS_SELECTOR, "pre.answer").get_attribute("textContent")
    assert "The" in answer and s["filtered"] in answer and "think" not in answer
