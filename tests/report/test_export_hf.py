"""``lmeval export --format hf-eval-results``: Hub ``.eval_results/<task>.yaml`` read back with huggingface_hub's
own parser (``parse_eval_result_entries``), values equal to results.json; tasks without a Hub dataset left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from huggingface_hub import parse_eval_result_entries

from lmeval.report.export import export
from lmeval.scorer.score import score_run
from tests.report.conftest import pipeline
from tests.scorer.golden_io import build, load_golden


def test_hub_eval_results_read_back(tmp_path: Path) -> None:
    rdir = pipeline(tmp_path, "run", "+task=[arc_easy,arith]", "run.limit=20", "run.num_fewshot=0")
    results = json.loads((rdir / "results.json").read_text(encoding="utf-8"))
    files = export(str(rdir), "hf-eval-results", str(tmp_path / "repo"))
    assert [p.relative_to(tmp_path / "repo").as_posix() for p in files] == [".eval_results/arc_easy.yaml"]
    entries = parse_eval_result_entries(yaml.safe_load(files[0].read_text(encoding="utf-8")))
    res = results["results"]["arc_easy"]
    want = {k.partition(",")[0] for k in res if "," in k and "_stderr" not in k}
    assert {e.notes.split()[1] for e in entries if e.notes} == want == {"acc", "acc_norm"}
    for e in entries:
        assert (e.dataset_id, e.task_id) == ("allenai/ai2_arc", "arc_easy")
        metric = e.notes.split()[1] if e.notes else ""
        assert e.value == res[f"{metric},none"] and e.date == results["run"]["finished"]
        assert results["plan_hash"][:12] in (e.notes or "")


def test_no_hub_dataset_is_one_line(tmp_path: Path) -> None:
    _, rdir = build(load_golden("fake"), tmp_path / "golden", tasks=["asdiv"])
    assert not score_run(str(rdir), bootstrap_iters=10).partial
    r = subprocess.run([sys.executable, "-m", "lmeval", "export", str(rdir), "--format", "hf-eval-results", "-o",
                        str(tmp_path / "out")], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2 and "no task has a Hub dataset" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_cli_offers_every_format() -> None:
    from lmeval.cli.export import FORMAT_NAMES
    from lmeval.report.export import FORMATS

    assert FORMAT_NAMES == FORMATS
