"""Plan identity is content only: compiles that differ only in where files live give byte-identical plans.

Two copies of the same data at different paths, two include directories with the same task file, two output
paths, the tiny model built under two cache directories (and passed as ``model.path`` from each): the plan
bytes and ``plan_hash`` are the same and ``lmeval diff`` exits 0. The locations are not in the plan at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lmeval.cli import main
from lmeval.common.tinymodel import ensure_tiny_model
from lmeval.plans.plan import read_header, read_plan
from lmeval.plans.plan.identity import LOCATION_KEYS, locations_in, split_locations
from tests.executor.plantools import data_dir

TASK_YAML = """\
task: arc_copy
dataset_path: allenai/ai2_arc
dataset_name: ARC-Challenge
output_type: multiple_choice
training_split: train
validation_split: validation
test_split: test
doc_to_text: "Question: {{question}}\\nAnswer:"
doc_to_target: "{{choices.label.index(answerKey)}}"
doc_to_choice: "{{choices.text}}"
metadata:
  version: 1.0
"""


def _site(root: Path, cache: Path) -> dict[str, Path]:
    """One 'machine': its own copy of the data, include dir, model cache and output path."""
    data = root / "data"
    data.mkdir(parents=True)
    shutil.copytree(data_dir() / "arc_challenge", data / "arc_challenge")
    shutil.copytree(data_dir() / "gsm8k", data / "gsm8k")
    inc = root / "tasks"
    inc.mkdir()
    (inc / "arc_copy.yaml").write_text(TASK_YAML, encoding="utf-8")
    return {"data": data, "inc": inc, "cache": cache, "out": root / "out" / "plan.msgpack"}


def _compile(site: dict[str, Path], monkeypatch: pytest.MonkeyPatch, *extra: str) -> Path:
    monkeypatch.setenv("LMEVAL_CACHE", str(site["cache"]))
    rc = main(
        [
            "compile",
            "+task=[arc_challenge,gsm8k]",
            f"run.data_dir={site['data']}",
            f"run.include_path={site['inc']}",
            "run.tasks=[arc_copy]",
            "run.limit=8",
            f"run.out={site['out']}",
            *extra,
        ]
    )
    assert rc == 0
    return site["out"]


def test_locations_do_not_change_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _site(tmp_path / "machine-a", tmp_path / "cache-a")
    b = _site(tmp_path / "elsewhere" / "machine-b", tmp_path / "cache-b")
    pa, pb = _compile(a, monkeypatch), _compile(b, monkeypatch)
    assert (a["cache"] / "models").is_dir() and (b["cache"] / "models").is_dir()  # two tiny model builds
    assert pa.read_bytes() == pb.read_bytes()
    header = read_header(pa)
    assert [t.name for t in header.tasks] == ["arc_challenge", "arc_copy", "gsm8k"]
    for p in (a, b):  # no location of either machine anywhere in the plan
        for where in (p["data"], p["inc"], p["cache"], p["out"]):
            assert str(where).encode() not in pa.read_bytes()
    assert locations_in(header.config) == []
    capsys.readouterr()
    assert main(["diff", str(pa), str(pb)]) == 0
    assert capsys.readouterr().out.startswith("identical:")

    # the model directory is a location too: the tiny model passed as model.path from each cache
    a2 = dict(a, out=tmp_path / "a2.msgpack")
    b2 = dict(b, out=tmp_path / "b2.msgpack")
    ma = ensure_tiny_model(str(a["cache"] / "models" / "tiny-v1"))
    mb = ensure_tiny_model(str(b["cache"] / "models" / "tiny-v1"))
    pa2 = _compile(a2, monkeypatch, f"model.path={ma}")
    pb2 = _compile(b2, monkeypatch, f"model.path={mb}")
    assert pa2.read_bytes() == pb2.read_bytes()
    assert str(ma).encode() not in pa2.read_bytes()
    # same prompts and token ids as with the built-in model: only the model's identity string differs
    plain, with_path = read_plan(pa), read_plan(pa2)
    assert [i.request_hash for i in plain.instances] == [i.request_hash for i in with_path.instances]
    assert [t.task_hash for t in plain.header.tasks] == [t.task_hash for t in with_path.header.tasks]


def test_content_still_changes_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _site(tmp_path / "a", tmp_path / "cache")
    pa = _compile(a, monkeypatch)
    b = dict(a, out=tmp_path / "b.msgpack")
    pb = _compile(b, monkeypatch, "run.num_fewshot=1")
    assert read_header(pa).plan_hash != read_header(pb).plan_hash
    # and the data is content: one changed document changes the plan although the path is the same
    f = a["data"] / "arc_challenge" / "test.jsonl"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    assert '"question": "' in lines[0]
    f.write_text("".join([lines[0].replace('"question": "', '"question": "Q: ', 1), *lines[1:]]), encoding="utf-8")
    c = dict(a, out=tmp_path / "c.msgpack")
    pc = _compile(c, monkeypatch)
    assert read_header(pa).plan_hash != read_header(pc).plan_hash


def test_split_locations_is_the_one_rule() -> None:
    cfg = {
        "run": {"out": "x.msgpack", "data_dir": "/d", "include_path": None, "limit": 3},
        "model": {"name": "m", "path": "/models/m"},
        "task": {"spec": {"kind": "jsonl_spec", "path": "/s.jsonl"}, "arith": {"task": "arith"}},
    }
    portable, found = split_locations(cfg)
    assert found == {
        "run.out": "x.msgpack",
        "run.data_dir": "/d",
        "model.path": "/models/m",
        "task.spec.path": "/s.jsonl",
    }
    assert portable == {
        "run": {"limit": 3},
        "model": {"name": "m"},
        "task": {"spec": {"kind": "jsonl_spec"}, "arith": {"task": "arith"}},
    }
    assert cfg["run"]["out"] == "x.msgpack"  # not modified
    assert locations_in(cfg) == ["model.path", "run.data_dir", "run.out", "task.spec.path"]
    assert locations_in(portable) == []
    assert "model.path" in LOCATION_KEYS


def test_writer_refuses_a_header_with_a_location() -> None:
    from lmeval.plans.plan import ModelInfo, PlanHeader, seal

    with pytest.raises(ValueError, match="run.data_dir"):
        seal(PlanHeader(config={"run": {"data_dir": "/d"}}, model=ModelInfo(name="m"), tasks=[]), [])


def test_a_jsonl_spec_at_two_paths_gives_one_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A JSONL task spec's documents are in the plan; where the file lives is not (bad lines name the file
    by its name only)."""
    good = Path(__file__).resolve().parents[1] / "fixtures" / "spec" / "tasks.jsonl"
    plans = []
    for d in (tmp_path / "a", tmp_path / "b" / "deeper"):
        d.mkdir(parents=True)
        (d / "tasks.jsonl").write_bytes(good.read_bytes() + b"{not json\n")
        out = d / "plan.msgpack"
        rc = main(
            ["compile", "+task=jsonl", f"task.path={d / 'tasks.jsonl'}", "task.allow_bad_tasks=true", f"--out={out}"]
        )
        assert rc == 0, capsys.readouterr().err
        plans.append(out)
    assert plans[0].read_bytes() == plans[1].read_bytes()
    header = read_header(plans[0])
    assert header.extra["spec_bad_lines"] and all(x.startswith("tasks.jsonl:") for x in header.extra["spec_bad_lines"])
    assert str(tmp_path).encode() not in plans[0].read_bytes()
