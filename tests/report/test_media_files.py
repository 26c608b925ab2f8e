"""#64: ``lmeval report`` on a run whose plan's image folder holds something that is not a regular image file: a
FIFO (reading it blocked the report for ever), a link to ``/dev/zero`` (read to gigabytes) or a file over the
image size limit. Each is refused unread (``plans.read_image``): the report is still written, the image shown as
unreadable with the reason, one warning line on stderr, the other documents' thumbnails unchanged. The report runs
as a subprocess under a 60 s timeout and a 2 GiB address-space cap, so the old behaviour fails the test (a
timeout, or a MemoryError traceback) instead of taking the machine."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lmeval.plans import MAX_IMAGE_BYTES, media_dir, read_plan
from tests.imagedata import make_chartqa
from tests.report.conftest import lmeval

REPO = Path(__file__).resolve().parents[2]
CAP = 2 << 30


@pytest.fixture(scope="module")
def chartqa_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("report-media")
    make_chartqa(base / "data", n=3)
    plan, out = base / "chartqa.msgpack", base / "run"
    lmeval("compile", "+task=chartqa", f"run.data_dir={base / 'data'}", f"run.out={plan}")
    lmeval("execute", str(plan), "model.backend=fake", "--out", str(out), "--no-progress")
    lmeval("score", str(out), "--quiet", "--trust-code")
    return {"base": base, "plan": plan, "run": out}


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _dev_zero(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _too_big(p: Path) -> None:
    with p.open("wb") as f:  # sparse: costs no disk
        f.truncate(MAX_IMAGE_BYTES + 1)


@pytest.mark.parametrize(
    ("make", "reason"),
    [(_fifo, "found a FIFO"), (_dev_zero, "found a character device"), (_too_big, "more than the limit")],
    ids=["fifo", "link_to_dev_zero", "over_the_size_limit"],
)
def test_a_media_file_that_is_not_a_regular_image_is_shown_unreadable(
    chartqa_run: dict[str, Path], tmp_path: Path, make: Callable[[Path], None], reason: str
) -> None:
    plan = chartqa_run["plan"]
    sha = read_plan(plan).instances[1].media[0]["sha256"]  # type: ignore[index]
    bad = media_dir(plan) / sha
    kept = tmp_path / "kept"
    shutil.move(bad, kept)
    make(bad)
    try:
        p, html = _report(chartqa_run["run"], tmp_path / "report.html")
    finally:
        bad.unlink()
        shutil.move(kept, bad)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    (line,) = p.stderr.splitlines()
    assert line.startswith("WARNING: ") and sha[:12] in line and reason in line, line
    assert f"image {sha[:12]} in {media_dir(plan)} cannot be read (" in html and reason in html
    assert html.count("data:image/png;base64,") == 2  # the other two documents' thumbnails


def _report(run: Path, out: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    p = subprocess.run(
        [sys.executable, "-m", "lmeval", "report", str(run), "-o", str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60, preexec_fn=_cap,
    )  # fmt: skip
    return p, out.read_text(encoding="utf-8") if out.is_file() else ""
