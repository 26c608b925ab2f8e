"""Benchmark ``lmeval report`` on full MMLU 5-shot results (57 subjects, 14,042 docs, 56,168 Instances).

MMLU is compiled 5-shot and 0-shot with the tiny reference model's tokenizer from the data directory,
executed by the ``fake`` backend (the report's cost does not depend on who produced the answers) and scored.
Then, one ``python -m lmeval report`` process each (start-up included, median of ``--repeats``):

- **one run**: the 5-shot results alone;
- **two runs**: 0-shot and 5-shot side by side (comparison with paired significance, and the plan diff).

For each: build time, file size (and gzip size, for attaching to a release), and, when chromium and
chromedriver are installed, how long the page takes to load in headless chromium and to switch the sample
browser to the largest subject. Prints a table and writes ``bench/results/report.md``.

    .venv/bin/python bench/report.py [--data-dir DIR] [--repeats 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

CPU: list[float] = []  # CPU seconds (user + sys) of each lmeval process, in call order


def lmeval(*args: str) -> float:
    """Wall seconds of one ``python -m lmeval.cli ARGS`` process (its CPU seconds go to ``CPU``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "lmeval.cli", *args], check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall


def prepare(work: Path, data_dir: str, shots: int) -> tuple[Path, dict[str, float]]:
    plan, out = work / f"mmlu{shots}.msgpack", work / f"mmlu_{shots}shot"
    t: dict[str, float] = {}
    if not (out / "results.json").exists():
        t["compile"] = lmeval(
            "compile", "+task=mmlu", f"run.num_fewshot={shots}", f"run.data_dir={data_dir}", f"run.out={plan}"
        )
        t["execute"] = lmeval("execute", str(plan), "model.backend=fake", "--out", str(out), "--no-progress")
        t["score"] = lmeval("score", str(out), "--quiet")
    return out, t


def browser_times(page: Path) -> dict[str, float] | None:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.binary_location = chromium
    d = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        d.set_page_load_timeout(300)
        t = time.perf_counter()
        d.get(page.resolve().as_uri())
        load = time.perf_counter() - t
        sel = Select(d.find_element(By.ID, "s-task"))
        sizes = [int(o.text.rsplit("(", 1)[1].rstrip(")")) for o in sel.options]
        biggest = max(range(len(sizes)), key=sizes.__getitem__)
        t = time.perf_counter()
        sel.select_by_index(biggest)
        d.find_element(By.CSS_SELECTOR, "#s-docs article.doc")
        switch = time.perf_counter() - t
        box = d.find_element(By.ID, "s-search")
        t = time.perf_counter()
        box.send_keys("which")
        d.find_element(By.ID, "s-count")
        search = time.perf_counter() - t
        return {"load": load, "switch": switch, "search": search, "docs": float(sizes[biggest])}
    finally:
        d.quit()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str((ROOT / ".." / "shared" / "data").resolve()))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", default=None, help="keep plans and results here (reused when present)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "report.md"))
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="lmeval-bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    five, t5 = prepare(work, args.data_dir, 5)
    zero, t0 = prepare(work, args.data_dir, 0)
    rows: list[dict[str, Any]] = []
    for name, dirs in (("one run (MMLU 5-shot)", [five]), ("two runs (0-shot vs 5-shot)", [zero, five])):
        page = work / ("one.html" if len(dirs) == 1 else "two.html")
        times = [lmeval("report", *map(str, dirs), "-o", str(page)) for _ in range(args.repeats)]
        cpu = CPU[-args.repeats :]
        data = page.read_bytes()
        rows.append(
            {
                "what": name,
                "build_s": statistics.median(times),
                "all_s": times,
                "cpu_s": statistics.median(cpu),
                "mb": len(data) / 1e6,
                "gz_mb": len(gzip.compress(data, 6)) / 1e6,
                "browser": browser_times(page),
            }
        )
    load = os.getloadavg()
    lines = [
        "# lmeval report: full MMLU 5-shot results",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        "",
        "MMLU (57 subjects, 14,042 docs, 56,168 Instances per run) compiled with the tiny model's tokenizer, "
        "executed by the fake backend, scored. Build: one `python -m lmeval report` process (start-up, reading "
        f"results, samples and the 107 MB plan with its hash check, writing the page), median of {args.repeats}; "
        "its CPU time (user + sys) is the figure to compare when the machine is shared. "
        "Browser: headless chromium from file://, page load until the load event, then switching the sample "
        "browser to the largest subject and typing a search.",
        "",
        "| report | build wall s (median) | runs | build CPU s (median) | size MB | gzip MB | chromium load s "
        "| switch to largest subject s | search s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["browser"] or {}
        lines.append(
            f"| {r['what']} | {r['build_s']:.1f} | {', '.join(f'{x:.1f}' for x in r['all_s'])} | {r['cpu_s']:.1f} "
            f"| {r['mb']:.1f} | "
            f"{r['gz_mb']:.1f} | {b.get('load', float('nan')):.2f} | {b.get('switch', float('nan')):.2f} "
            f"({int(b.get('docs', 0))} docs) | {b.get('search', float('nan')):.2f} |"
        )
    if t5 or t0:
        lines += [
            "",
            "Preparation (not the report): "
            + "; ".join(
                f"{k}-shot {', '.join(f'{s} {v:.1f} s' for s, v in t.items())}" for k, t in (("5", t5), ("0", t0)) if t
            )
            + ".",
        ]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
