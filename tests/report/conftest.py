"""Real pipeline runs for the report tests: arc_easy (real data, the tiny model's tokenizer) and the generated
arith task, compiled 0-shot and 3-shot, executed by the fake backend (the model is not what is tested here),
scored; plus a browser (Debian's chromium + chromedriver, driven by selenium)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 30


def data_dir() -> Path:
    env = os.environ.get("LMEVAL_DATA_DIR")
    return Path(env) if env else (REPO / ".." / "shared" / "data").resolve()


def lmeval(*argv: str) -> str:
    from lmeval.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv))
    assert rc == 0, f"lmeval {' '.join(argv)} exited {rc}"
    return buf.getvalue()


def pipeline(base: Path, name: str, *overrides: str, engine: tuple[str, ...] = ()) -> Path:
    """compile → execute (fake backend) → score; returns the results directory."""
    plan, out = base / f"{name}.msgpack", base / name
    lmeval("compile", *overrides, f"run.data_dir={data_dir()}", f"run.out={plan}")
    lmeval("execute", str(plan), "model.backend=fake", *engine, "--out", str(out), "--no-progress")
    lmeval("score", str(out), "--quiet", "--bootstrap-iters", "1000")
    return out


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert (data_dir() / "arc_easy" / "test.jsonl").is_file(), f"benchmark data not found in {data_dir()}"
    base = tmp_path_factory.mktemp("report-runs")
    tasks = "+task=[arc_easy,arith]"
    a = pipeline(base, "zero_shot", tasks, f"run.limit={LIMIT}", "run.num_fewshot=0")
    b = pipeline(base, "three_shot", tasks, f"run.limit={LIMIT}", "run.num_fewshot=3")
    return {"base": base, "a": a, "b": b, "plan_a": base / "zero_shot.msgpack", "plan_b": base / "three_shot.msgpack"}


@pytest.fixture(scope="session")
def report_html(two_runs: dict[str, Any]) -> Path:
    from lmeval.report import write_report

    return write_report([str(two_runs["a"]), str(two_runs["b"])], two_runs["base"] / "report.html")


@pytest.fixture(scope="session")
def browser() -> Any:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.fail("chromium and chromedriver are needed: apt-get install -y chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.binary_location = chromium
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver_bin), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $LMEVAL_TEST_ARTIFACTS when set (CI keeps it), else the pytest temp dir."""
    env = os.environ.get("LMEVAL_TEST_ARTIFACTS")
    d = Path(env) if env else tmp_path_factory.mktemp("artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d
