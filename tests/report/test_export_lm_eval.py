"""``lmeval export --format lm-eval-samples`` against lm-eval 0.4.13's own ``--log_samples`` files.

``tests/scorer/golden/<source>.samples.json.gz`` holds the lines lm-eval's EvaluationTracker wrote for the
goldens' runs (``make_golden.py --sample-logs``). The goldens' responses are scored by us and exported; every
line must equal lm-eval's: the same files, lines and field order, every field's value equal, and the bytes
equal once lm-eval's line is given the two differences the exporter documents (keys of ``doc`` and of
generation kwargs in sorted order, ``doc_hash`` of that sorted document).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmeval import compiler
from lmeval.report.export import export
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import GOLDEN_DIR, build, close, load_golden, results_for_plan

GOLDEN_TASKS = GOLDEN_DIR.parent / "golden_tasks"
DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

SOURCES = ("fake", "metrics", "hooks")
NAME = re.compile(r"samples_(?P<task>.+)_(?P<date>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+)\.jsonl")


def _lm_eval_lines(source: str) -> dict[str, list[str]]:
    with gzip.open(GOLDEN_DIR / f"{source}.samples.json.gz", "rb") as f:
        data: dict[str, list[str]] = json.loads(f.read())["tasks"]
    return data


def _hooks_runs(tmp: Path) -> list[Path]:
    """The hooks golden's tasks compiled by lmeval from their YAMLs (real plans), lm-eval's responses as
    results, scored with their user code (as tests/scorer/test_parity_hooks.py does)."""
    golden = load_golden("hooks")
    out = []
    for name in golden["tasks"]:
        task = name if name.startswith("golden_") else f"lm_eval:{name}"
        plan = compiler.compile_to_file(
            [f"run.tasks=[{task}]", f"run.data_dir={DATA}", f"run.limit={len(golden['tasks'][name]['docs'])}",
             f"run.include_path={GOLDEN_TASKS}"],
            out=str(tmp / f"{name}.msgpack"),
        )  # fmt: skip
        rdir = results_for_plan(dict(golden, tasks={name: golden["tasks"][name]}), Path(plan), tmp / name)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("lmeval.scorer.usercode.hooks.TIMEOUT_S", 30.0)  # a loaded machine; no completion loops
            res = score_run(str(rdir), trust_code=True, include_path=[GOLDEN_TASKS], bootstrap_iters=10)
        assert not res.partial
        out.append(rdir)
    return out


@pytest.fixture(scope="module", params=SOURCES)
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Path]]:
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "hooks":
        return "hooks", [f for rdir in _hooks_runs(tmp) for f in export(str(rdir), "lm-eval-samples", str(tmp / "out"))]
    _, rdir = build(load_golden(request.param), tmp / "run")
    assert not score_run(str(rdir), bootstrap_iters=10).partial
    return request.param, export(str(rdir), "lm-eval-samples", str(tmp / "out"))


def _sorted(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _sorted(x[k]) for k in sorted(x)}
    if isinstance(x, list):
        return [_sorted(v) for v in x]
    return x


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return close(a, b)
    return bool(a == b) and type(a) is type(b)


def _lm_eval_dumps(line: dict[str, Any]) -> str:
    return json.dumps(line, ensure_ascii=False) + "\n"


def _as_documented(theirs: dict[str, Any]) -> dict[str, Any]:
    """lm-eval's line with the exporter's documented differences: sorted maps in doc and arguments, doc_hash
    of the sorted doc (computed as lm-eval computes it)."""
    import hashlib

    out = dict(theirs)
    out["doc"] = _sorted(theirs["doc"])
    out["arguments"] = {g: {a: _sorted(v) for a, v in args.items()} for g, args in theirs["arguments"].items()}
    text = json.dumps(out["doc"], indent=2, ensure_ascii=False)
    out["doc_hash"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return out


def test_the_same_files_and_lines(exported: tuple[str, list[Path]]) -> None:
    source, files = exported
    want = _lm_eval_lines(source)
    names = [NAME.fullmatch(f.name) for f in files]
    assert all(names), [f.name for f in files]
    assert sorted(m["task"] for m in names if m) == sorted(want)
    if source != "hooks":  # one export: one date (hooks exports one run per task)
        assert len({m["date"] for m in names if m}) == 1
    for f, m in zip(files, names, strict=True):
        assert m is not None
        assert len(f.read_text(encoding="utf-8").splitlines()) == len(want[m["task"]]), f.name


def test_lines_equal_lm_eval(exported: tuple[str, list[Path]]) -> None:
    source, files = exported
    want = _lm_eval_lines(source)
    checked = 0
    diffs: list[tuple[Any, ...]] = []
    for f in files:
        m = NAME.fullmatch(f.name)
        assert m is not None
        for ours, theirs in zip(f.read_text(encoding="utf-8").splitlines(keepends=True), want[m["task"]], strict=True):
            t = json.loads(theirs)
            assert _lm_eval_dumps(t) == theirs  # parsing and re-dumping lm-eval's line keeps its bytes
            o = json.loads(ours)
            if list(o) != list(t):
                diffs.append((f.name, "field order", list(o), list(t)))
            for k, v in t.items():
                if k in t["metrics"] and _close(o.get(k), v):
                    t[k] = o[k]  # the scorer's per-sample values agree with lm-eval's to 1e-9 (docs), not bits
                elif k != "doc_hash" and o.get(k) != v:
                    diffs.append((f.name, t["doc_id"], k, o.get(k), v))
            if ours != _lm_eval_dumps(_as_documented(t)):
                diffs.append((f.name, t["doc_id"], "bytes", ours[:200], theirs[:200]))
            checked += 1
    assert not diffs, diffs[:5]
    assert checked >= {"fake": 300, "metrics": 300, "hooks": 90}[source]


def test_prompt_and_target_hashes_are_lm_evals(exported: tuple[str, list[Path]]) -> None:
    """prompt_hash and target_hash are lm-eval's own; doc_hash is too for a document whose keys are sorted."""
    source, files = exported
    want = _lm_eval_lines(source)
    for f in files:
        m = NAME.fullmatch(f.name)
        assert m is not None
        for ours, theirs in zip(f.read_text(encoding="utf-8").splitlines(), want[m["task"]], strict=True):
            o, t = json.loads(ours), json.loads(theirs)
            assert (o["prompt_hash"], o["target_hash"]) == (t["prompt_hash"], t["target_hash"])
            if json.dumps(t["doc"]) == json.dumps(_sorted(t["doc"])):
                assert o["doc_hash"] == t["doc_hash"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lmeval", "export", *args], capture_output=True, text=True)


def test_cli_writes_the_files_and_refuses_bad_input(tmp_path: Path) -> None:
    _, rdir = build(load_golden("fake"), tmp_path / "run", tasks=["asdiv"])
    r = _cli(str(rdir), "--format", "lm-eval-samples", "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and "not a scored run" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
    assert not score_run(str(rdir), bootstrap_iters=10).partial
    r = _cli(str(rdir), "--format", "lm-eval-samples", "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    (path,) = (tmp_path / "out").iterdir()
    assert NAME.fullmatch(path.name) and path.name.startswith("samples_asdiv_")
    assert [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()][0]["doc_id"] == 0
    for bad, msg in (
        ([str(tmp_path / "nope")], "no such results directory"),
        ([str(tmp_path)], "not a results directory (no manifest.json)"),
        ([str(rdir), "--plan", str(tmp_path / "x.msgpack")], "x.msgpack is not there"),
    ):
        r = _cli(*bad, "--format", "lm-eval-samples")
        assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
