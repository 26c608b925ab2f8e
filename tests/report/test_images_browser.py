"""#54: the report's sample browser shows each document's images as thumbnails beside its prompt, in a real
headless browser (chromium): a chartqa run (tests/imagedata.py's charts, the fake backend) whose thumbnails are
decoded by the browser, name the plan's image hashes, and an image missing from the plan's folder is shown as
missing rather than dropped."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from lmeval.plans import media_dir, read_plan
from tests.imagedata import make_chartqa
from tests.report.conftest import lmeval


@pytest.fixture(scope="module")
def chartqa_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("report-images")
    make_chartqa(base / "data", n=3)
    plan, out = base / "chartqa.msgpack", base / "run"
    lmeval("compile", "+task=chartqa", f"run.data_dir={base / 'data'}", f"run.out={plan}")
    lmeval("execute", str(plan), "model.backend=fake", "--out", str(out), "--no-progress")
    lmeval("score", str(out), "--quiet", "--trust-code")
    return {"base": base, "plan": plan, "run": out}


def _open(browser: Any, html: Path) -> None:
    browser.get(html.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    sel = Select(browser.find_element(By.ID, "s-task"))
    sel.select_by_visible_text(next(o.text for o in sel.options if o.text.startswith("chartqa ")))


def test_thumbnails_beside_each_prompt(browser: Any, chartqa_run: dict[str, Path]) -> None:
    from lmeval.report import write_report

    html = write_report([str(chartqa_run["run"])], chartqa_run["base"] / "report.html")
    _open(browser, html)
    insts = {i.doc_id: i for i in read_plan(chartqa_run["plan"]).instances}
    arts = browser.find_elements(By.CSS_SELECTOR, "#s-docs article.doc")
    assert len(arts) == 3
    for art in arts:
        inst = insts[int(art.get_attribute("data-doc"))]
        (img,) = art.find_elements(By.CSS_SELECTOR, ".thumbs img")
        m = inst.media[0]  # type: ignore[index]
        assert img.get_attribute("alt") == f"image 0: {m['sha256'][:12]} 48x32 image/png {m['size']} bytes"
        # the browser decoded it: a 48x32 chart shown at its own size (under the 96-pixel bound)
        assert browser.execute_script("return [arguments[0].complete, arguments[0].naturalWidth, "
                                      "arguments[0].naturalHeight]", img) == [True, 48, 32]  # fmt: skip
        assert img.get_attribute("src").startswith("data:image/png;base64,")
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_a_missing_image_is_shown_as_missing(browser: Any, chartqa_run: dict[str, Path], tmp_path: Path) -> None:
    from lmeval.report import write_report

    run = tmp_path / "run"
    shutil.copytree(chartqa_run["run"], run)
    inst = read_plan(chartqa_run["plan"]).instances[1]
    gone = media_dir(chartqa_run["plan"]) / inst.media[0]["sha256"]  # type: ignore[index]
    keep = tmp_path / "kept"
    shutil.move(gone, keep)
    try:
        html = write_report([str(run)], tmp_path / "report.html")
    finally:
        shutil.move(keep, gone)
    _open(browser, html)
    art = browser.find_element(By.CSS_SELECTOR, '#s-docs article.doc[data-doc="1"]')
    assert art.find_elements(By.CSS_SELECTOR, ".thumbs img") == []
    assert "is missing" in art.find_element(By.CSS_SELECTOR, ".thumb-missing").text
    other = browser.find_element(By.CSS_SELECTOR, '#s-docs article.doc[data-doc="0"]')
    assert len(other.find_elements(By.CSS_SELECTOR, ".thumbs img")) == 1


def test_lm_eval_sample_logs_carry_the_media_hashes(chartqa_run: dict[str, Path], tmp_path: Path) -> None:
    import json

    from lmeval.report.export import export

    (f,) = export(str(chartqa_run["run"]), "lm-eval-samples", str(tmp_path / "out"))
    lines = [json.loads(x) for x in Path(f).read_text().splitlines()]
    insts = {i.doc_id: i for i in read_plan(chartqa_run["plan"]).instances}
    assert len(lines) == 3
    for line in lines:
        m = insts[line["doc_id"]].media[0]  # type: ignore[index]
        args = line["arguments"]["gen_args_0"]
        assert args["arg_0"] == insts[line["doc_id"]].context
        assert args["arg_2"] == {"visual": [f"<image sha256={m['sha256']} size=48x32 mime=image/png>"]}


def test_eee_sample_lines_carry_the_media_hashes(chartqa_run: dict[str, Path], tmp_path: Path) -> None:
    import json

    from lmeval.report.export import export
    from tests.report.test_export_eee import INST

    files = export(str(chartqa_run["run"]), "eee", str(tmp_path / "eee"))
    (samples,) = [f for f in files if str(f).endswith("_samples.jsonl")]
    insts = {i.doc_id: i for i in read_plan(chartqa_run["plan"]).instances}
    lines = [json.loads(x) for x in Path(samples).read_text().splitlines()]
    assert lines
    for line in lines:
        assert not [e.message for e in INST.iter_errors(line)]
        m = insts[int(line["sample_id"])].media[0]  # type: ignore[index]
        assert json.loads(line["metadata"]["media"]) == [
            {"sha256": m["sha256"], "mime": "image/png", "width": 48, "height": 32}
        ]
