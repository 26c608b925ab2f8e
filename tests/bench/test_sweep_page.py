"""bench/sweep.py's page from a real (fake-backend) sweep run: every variant's score on its format.metric, the
group's spread, the per-format spread."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from lmeval import compiler
from tests.support import data_dir

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> object:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_sweep", BENCH / "sweep.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_page_shows_each_variant_and_the_spread(tmp_path: Path) -> None:
    from lmeval.executor import execute
    from lmeval.scorer import score

    sweep = "+run.sweep={formats:[cf,mcf],labels:[letters,parens],seeds:[1234,7]}"
    plan = compiler.compile_to_file(["+task=arc_easy@sweep", sweep, f"run.data_dir={data_dir()}", "run.limit=4",
                                     "run.num_fewshot=1"], out=str(tmp_path / "p.msgpack"))  # fmt: skip
    out = tmp_path / "run"
    execute(str(plan), out=str(out), overrides=["model.backend=fake"], progress=False)
    score(str(out))
    doc = json.loads((out / "results.json").read_text())
    b = _bench()
    rows = b.variants(doc, "arc_easy@sweep")  # type: ignore[attr-defined]
    assert [r["name"] for r in rows] == doc["group_subtasks"]["arc_easy@sweep"] and len(rows) == 6
    assert rows[1]["seed"] == 7 and rows[4]["labels"] == "parens" and rows[0]["metric"] == "acc_norm,none"
    assert [r["value"] for r in rows] == [doc["results"][r["name"]][r["metric"]] for r in rows]
    a = SimpleNamespace(task="arc_easy", num_fewshot=1, limit=4, backend="fake")
    m = {"arch": "x", "nproc": "2", "cpu": "c", "load": "0"}
    page = b._page(doc, "arc_easy@sweep", a, m, m, 1.0, None, "cmd")  # type: ignore[attr-defined]
    s = doc["results"]["arc_easy@sweep"]
    assert f"min {s['spread_min,none']:.3f} ({s['spread_argmin']})" in page and "over 6 variants" in page
    assert "| arc_easy@mcf+parens+seed7 | mcf | parens | 7 | acc,none |" in page
    assert "| cf | 2 |" in page and "| mcf | 4 |" in page and "| gen |" not in page
