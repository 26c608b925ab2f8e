"""The report opens on the scores (#62 item 6, acceptance 6), in a real headless browser (chromium): the first
section is Scores; its table and its interval chart lie within the first viewport (bounding boxes from the DOM);
every task and group of both runs is a row with each run's value as results.json has it, its 95% interval and,
for the second run, its difference from the baseline marked significant exactly where ``lmeval compare``'s
paired test says p < 0.05; the chart's pixels in the screenshot are not blank. The screenshot is saved
(``artifacts``: $LMEVAL_TEST_ARTIFACTS, which CI keeps)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from selenium.webdriver.common.by import By

from lmeval.diff.runs import compare
from lmeval.report.html import fmt


@pytest.fixture(scope="module")
def first_screen(browser: Any, report_html: Path, artifacts: Path) -> dict[str, Any]:
    browser.set_window_size(1400, 1000)
    browser.get(report_html.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    png = browser.get_screenshot_as_png()
    (artifacts / "report-first-screen.png").write_bytes(png)
    return {"page": browser, "png": png}


def _rect(page: Any, element: Any) -> dict[str, float]:
    return dict(page.execute_script("return arguments[0].getBoundingClientRect().toJSON()", element))


def test_scores_come_first_and_fit_the_first_screen(first_screen: dict[str, Any]) -> None:
    page = first_screen["page"]
    sections = [s.get_attribute("id") for s in page.find_elements(By.CSS_SELECTOR, "body > section")]
    assert sections[:3] == ["scores", "provenance", "results"]
    height = page.execute_script("return window.innerHeight")
    assert page.execute_script("return window.scrollY") == 0
    table = page.find_element(By.CSS_SELECTOR, "#scores table.scores")
    t = _rect(page, table)
    assert 0 <= t["top"] and t["bottom"] <= height, f"the scores table {t} is not within the first {height}px"
    charts = page.find_elements(By.CSS_SELECTOR, "#scores table.scores td.chart svg.forest")
    assert charts
    for svg in charts:
        c = _rect(page, svg)
        assert 0 <= c["top"] and c["bottom"] <= height and c["width"] > 100 and c["height"] > 0
    prov = _rect(page, page.find_element(By.ID, "provenance"))
    assert prov["top"] >= t["bottom"]  # provenance follows the scores


def test_the_chart_is_drawn(first_screen: dict[str, Any]) -> None:
    """The chart column's pixels in the screenshot: bars in the runs' colours, not a blank region."""
    page = first_screen["page"]
    img = Image.open(io.BytesIO(first_screen["png"])).convert("RGB")
    ratio = float(page.execute_script("return window.devicePixelRatio"))
    cells = page.find_elements(By.CSS_SELECTOR, "#scores table.scores td.chart svg.forest")
    box = [_rect(page, c) for c in cells]
    left, top = min(b["left"] for b in box), min(b["top"] for b in box)
    right, bottom = max(b["right"] for b in box), max(b["bottom"] for b in box)
    region = img.crop((int(left * ratio), int(top * ratio), int(right * ratio), int(bottom * ratio)))
    raw = region.tobytes()
    pixels = [raw[i : i + 3] for i in range(0, len(raw), 3)]
    coloured = sum(1 for p in pixels if max(p) - min(p) > 60)  # the bars, not grey grid lines
    assert coloured / len(pixels) > 0.01, f"chart region {left, top, right, bottom} is blank ({coloured} coloured)"
    bars = page.find_elements(By.CSS_SELECTOR, "#scores svg.forest rect.bar")
    assert {b.get_attribute("data-run") for b in bars} == {"0", "1"}


def test_every_score_and_difference_as_the_runs_have_them(
    first_screen: dict[str, Any], two_runs: dict[str, Any]
) -> None:
    page = first_screen["page"]
    runs = [json.loads((two_runs[k] / "results.json").read_text(encoding="utf-8")) for k in ("a", "b")]
    deltas = {(d.task, f"{d.metric},{d.filter}"): d for d in compare(str(two_runs["a"]), str(two_runs["b"])).deltas}
    rows = page.find_elements(By.CSS_SELECTOR, "#scores table.scores tbody tr")
    seen = {(r.get_attribute("data-task"), r.get_attribute("data-key")) for r in rows}
    want = {(t, k) for res in runs for t, m in res["results"].items() for k in m if "," in k and "_stderr," not in k}
    assert seen == want
    marked = 0
    for row in rows:
        task, key = row.get_attribute("data-task"), row.get_attribute("data-key")
        for i, res in enumerate(runs):
            cell = row.find_element(By.CSS_SELECTOR, f'td.value[data-run="{i}"]')
            v = res["results"][task][key]
            assert cell.get_attribute("data-value") == repr(v) and cell.text.startswith(fmt(v))
            ci = cell.find_element(By.XPATH, "following-sibling::td[1]").text
            iv = (res.get("intervals") or {}).get("metrics", {}).get(task, {}).get(key)
            if iv is not None:
                assert ci == f"[{fmt(iv['low'])}, {fmt(iv['high'])}]"
        d = deltas.get((task, key))
        marks = row.find_elements(By.CSS_SELECTOR, 'td.value[data-run="1"] .delta')
        if d is None or not d.delta:
            assert marks == []
            continue
        (mark,) = marks
        sig = d.p is not None and d.p < 0.05
        assert mark.get_attribute("data-sig") == str(int(sig)) and mark.text == f"{d.delta:+.4f}" + (
            " *" if sig else ""
        )
        marked += sig
    assert marked, "the fixture's runs (0-shot vs 3-shot) should differ significantly somewhere"
