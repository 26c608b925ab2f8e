"""Scoring hooks (``!function``) keep plans portable: the same task folder at two paths gives one plan.

A task whose ``process_results`` is user code (``utils.py`` importing a sibling ``helper.py``) is compiled
from two copies of its folder (and of the data) at different paths: the plans are byte-identical and hold
neither path. ``lmeval score --trust-code --include-path DIR`` finds the task folder by content under
either copy and gives the same scores; a changed file is still refused, and without ``--include-path`` the
scorer says in one line which task and field need it and how to pass it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from lmeval.cli import main
from lmeval.compiler.tasks.functions import FunctionRef, score_ref_data
from lmeval.plans.plan import read_header
from lmeval.scorer.errors import ScoreError
from lmeval.scorer.usercode import refs as pyref
from tests.executor.plantools import data_dir

TASK_YAML = """\
task: gsm8k_pr
dataset_path: gsm8k
dataset_name: main
output_type: generate_until
test_split: test
doc_to_text: "Question: {{question}}\\nAnswer:"
doc_to_target: "{{answer}}"
generation_kwargs:
  until: ["\\n\\n"]
  max_gen_toks: 16
process_results: !function utils.process_results
metric_list:
  - metric: nchars
    aggregation: mean
    higher_is_better: true
  - metric: has_digit
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""

UTILS = """\
import helper


def process_results(doc, results):
    text = results[0]
    return {"nchars": float(len(text)) * helper.FACTOR, "has_digit": float(any(c.isdigit() for c in text))}
"""


def _site(root: Path) -> dict[str, Path]:
    """One 'machine': its own copy of the data and of the task folder."""
    data = root / "data"
    data.mkdir(parents=True)
    shutil.copytree(data_dir() / "gsm8k", data / "gsm8k")
    inc = root / "tasks"
    (inc / "gsm8k_pr").mkdir(parents=True)
    (inc / "gsm8k_pr" / "gsm8k_pr.yaml").write_text(TASK_YAML, encoding="utf-8")
    (inc / "gsm8k_pr" / "utils.py").write_text(UTILS, encoding="utf-8")
    (inc / "gsm8k_pr" / "helper.py").write_text("FACTOR = 2\n", encoding="utf-8")
    return {"root": root, "data": data, "inc": inc, "out": root / "plan.msgpack"}


def _compile(site: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> Path:
    rc = main(
        [
            "compile",
            f"run.data_dir={site['data']}",
            f"run.include_path={site['inc']}",
            "run.tasks=[gsm8k_pr]",
            "run.limit=5",
            f"--out={site['out']}",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    return site["out"]


def _score(rdir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["score", str(rdir), "--quiet", *flags])
    return rc, capsys.readouterr().err


def test_hook_task_at_two_paths_gives_one_plan_and_scores_from_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LMEVAL_TRUST_CODE", raising=False)
    a = _site(tmp_path / "machine-a")
    b = _site(tmp_path / "elsewhere" / "machine-b")
    pa, pb = _compile(a, capsys), _compile(b, capsys)
    assert pa.read_bytes() == pb.read_bytes()
    raw = pa.read_bytes()
    for where in (tmp_path, a["root"], b["root"], a["inc"], b["inc"]):
        assert str(where).encode() not in raw
    ref = read_header(pa).task("gsm8k_pr").config["process_results"]
    assert set(ref) == {"__function__", "file", "sha256", "files"}
    assert ref["file"] == "utils.py" and set(ref["files"]) == {"utils.py", "helper.py"}

    rdir = tmp_path / "results"
    assert main(["execute", str(pa), "model.backend=fake", "--out", str(rdir), "--no-progress"]) == 0

    # no folder given: one line naming the task and field, and how to pass it
    rc, err = _score(rdir, capsys, "--trust-code")
    assert rc == 2
    [line] = err.strip().splitlines()
    assert line.startswith("lmeval score: error: task gsm8k_pr: process_results: ")
    assert "--include-path DIR" in line and "utils.py" in line
    assert not (rdir / "results.json").exists()

    scores = []
    for site in (a, b):
        rc, err = _score(rdir, capsys, "--trust-code", "--include-path", str(site["inc"]))
        assert rc == 0, err
        scores.append(json.loads((rdir / "results.json").read_text())["results"])
    assert scores[0] == scores[1]
    res = scores[0]["gsm8k_pr"]
    assert res["nchars,none"] > 0 and 0 <= res["has_digit,none"] <= 1
    # the task folder itself (not only a folder above it) works too
    rc, err = _score(rdir, capsys, "--trust-code", "--include-path", str(b["inc"] / "gsm8k_pr"))
    assert rc == 0, err

    # a changed file of the folder is refused before anything runs; the scores already written stay
    written = (rdir / "results.json").read_bytes()
    canary = tmp_path / "ran"
    (b["inc"] / "gsm8k_pr" / "helper.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\nFACTOR = 3\n")
    rc, err = _score(rdir, capsys, "--trust-code", "--include-path", str(b["inc"]))
    assert rc == 2
    [line] = err.strip().splitlines()
    assert "task gsm8k_pr: process_results" in line
    assert f"{(b['inc'] / 'gsm8k_pr' / 'helper.py').resolve()} changed since the plan was compiled" in line
    assert not canary.exists() and (rdir / "results.json").read_bytes() == written
    # the unchanged copy is found by content wherever it is named
    rc, err = _score(rdir, capsys, "--trust-code", "--include-path", str(b["inc"]), "--include-path", str(a["inc"]))
    assert rc == 0, err
    assert json.loads((rdir / "results.json").read_text())["results"] == scores[0]
    assert not canary.exists()

    # without --trust-code nothing runs, --include-path or not
    rc, err = _score(rdir, capsys, "--include-path", str(a["inc"]))
    assert rc == 2 and "rerun with --trust-code" in err


def test_run_finds_the_folder_through_its_own_include_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LMEVAL_TRUST_CODE", raising=False)
    a = _site(tmp_path / "a")
    rc = main(
        [
            "run",
            f"run.data_dir={a['data']}",
            f"run.include_path={a['inc']}",
            "run.tasks=[gsm8k_pr]",
            "run.limit=3",
            "model.backend=fake",
            "--out",
            str(tmp_path / "r"),
            "--plan-out",
            str(tmp_path / "p.msgpack"),
            "--no-progress",
            "--trust-code",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    res = json.loads((tmp_path / "r" / "results.json").read_text())["results"]["gsm8k_pr"]
    assert res["nchars,none"] > 0


def test_installed_module_recorded_by_name_and_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook from an importable module outside the task folder: module name and sha256, no path; the
    scorer finds it by its import spec and refuses it once the file changed."""
    site = tmp_path / "site"
    site.mkdir()
    mod = site / "lmeval_test_extmod.py"
    mod.write_text("def score(doc, results):\n    return {'x': 7}\n")
    monkeypatch.syspath_prepend(str(site))
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    ref = score_ref_data(FunctionRef("lmeval_test_extmod.score", str(task_dir), str(task_dir / "t.yaml")))
    assert ref == {
        "__function__": "lmeval_test_extmod.score",
        "module": "lmeval_test_extmod",
        "sha256": hashlib.sha256(mod.read_bytes()).hexdigest(),
    }
    assert pyref.load_ref(ref, pyref.Trust(), "task t: process_results")({}, []) == {"x": 7}
    mod.write_text("def score(doc, results):\n    return {'x': 8}\n")
    with pytest.raises(ScoreError, match="not the file the plan was compiled with"):
        pyref.load_ref(ref, pyref.Trust(), "task t: process_results")
    monkeypatch.delitem(__import__("sys").modules, "lmeval_test_extmod", raising=False)


def test_recorded_file_names_cannot_leave_the_folder(tmp_path: Path) -> None:
    """A hostile plan cannot make the scorer look outside the folders it searches."""
    d = tmp_path / "task"
    d.mkdir()
    (d / "utils.py").write_text("def f(doc, results):\n    return {}\n")
    h = hashlib.sha256((d / "utils.py").read_bytes()).hexdigest()
    for rel in ("../task/utils.py", str(d / "utils.py"), "./utils.py", "a\\utils.py"):
        ref = {"__function__": "utils.f", "file": rel, "sha256": h, "files": {rel: h}}
        with pytest.raises(ScoreError, match="malformed file list"):
            pyref.load_ref(ref, pyref.Trust((tmp_path,)), "task t: process_results")


def test_lm_eval_catalog_hook_needs_no_include_path() -> None:
    """lm-eval's own task folders are searched by default: wikitext's process_results is found by content."""
    from lmeval.plans.usercode import lm_eval_tasks_dir

    tasks = lm_eval_tasks_dir()
    assert tasks is not None and (tasks / "wikitext" / "preprocess_wikitext.py").is_file()
    folder = tasks / "wikitext"
    ref = score_ref_data(FunctionRef("preprocess_wikitext.process_results", str(folder), str(folder / "w.yaml")))
    assert ref["file"] == "preprocess_wikitext.py" and str(tasks).encode() not in json.dumps(ref).encode()
    fn = pyref.load_ref(ref, pyref.Trust(), "task wikitext: process_results")
    out = fn({"page": "a b c"}, [-3.0])
    assert set(out) == {"word_perplexity", "byte_perplexity", "bits_per_byte"}
