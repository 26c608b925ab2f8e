"""``lmeval diff`` and its exit status: 0 identical, 1 differ, 2 bad input (one line, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import msgpack
import pytest

from lmeval.cli import main
from lmeval.cli.diff import split_sides
from lmeval.plans.errors import UserError
from tests.diff.diff_builders import build, spec, with_

ANAT = spec()


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("cli")
    a = build(d / "a.msgpack", [ANAT, spec("mmlu_astronomy", "astronomy")])
    b = build(d / "b.msgpack", [with_(ANAT, description="Anatomy questions.\n\n"), spec("mmlu_astronomy", "astronomy")])
    return a, b


def test_identical_exit_0_one_line(plans: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = plans
    assert main(["diff", str(a), str(a)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("identical: 2 tasks")


def test_differ_exit_1(plans: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = plans
    assert main(["diff", str(a), str(b), "--show", "1"]) == 1
    out = capsys.readouterr().out
    assert "1. Config and model" in out and "2. Tasks" in out and "3. Causes" in out
    assert "4. Changed prompts (first 1 of 6)" in out and "description: 6 docs, 24 instances" in out


def test_json_and_options_anywhere(plans: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = plans
    assert main(["diff", "--json", str(a), str(b), "--task=mmlu_anatomy", "--show", "0"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["identical"] is False and [t["name"] for t in d["tasks"]] == ["mmlu_anatomy"]
    assert d["prompts"] == [] and d["prompts_total"] == 6 and d["task_filter"] == "mmlu_anatomy"


def test_bad_input_exit_2(plans: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = plans
    txt = tmp_path / "x.json"
    txt.write_text('{"not": "a plan"}')
    raw = a.read_bytes()
    cut = tmp_path / "cut.msgpack"
    cut.write_bytes(raw[: len(raw) // 2])
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(raw)
    header = unpacker.unpack()
    header["version"] = 0
    old = tmp_path / "old-format.msgpack"
    old.write_bytes(msgpack.packb(header) + raw[unpacker.tell() :])
    cases = [
        ([str(txt), str(a)], "not an lmeval plan"),
        ([str(a), str(cut)], "truncated"),
        ([str(old), str(a)], "different format versions"),
        ([str(a), str(tmp_path / "none.msgpack")], "no such plan file"),
        ([str(a)], "diff needs two plans"),
    ]
    for args, msg in cases:
        assert main(["diff", *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("lmeval diff: error: ") and msg in err and err.count("\n") == 1, err


def test_split_sides() -> None:
    assert split_sides(["a", "b"]) == (["a"], ["b"])
    assert split_sides(["+task=x", "run.limit=5", "--", "+task=x"]) == (["+task=x", "run.limit=5"], ["+task=x"])
    with pytest.raises(UserError):
        split_sides(["a", "--", "b", "--", "c"])
    with pytest.raises(UserError):
        split_sides(["a", "b", "c"])


def test_diff_two_configs_compiled_on_the_fly(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["diff", "+task=arith", "run.num_fewshot=3", "--", "+task=arith", "run.num_fewshot=1", "--show", "1"]) == 1
    )
    out = capsys.readouterr().out
    assert "config: run.num_fewshot: 3 → 1" in out
    assert "few-shot selection: 200 docs, 200 instances" in out
    assert "old: +task=arith run.num_fewshot=3" in out


def test_diff_plan_against_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lmeval.lock.lockfile import LOCK_PATH, load_lock

    ref = LOCK_PATH.parent / load_lock().reference["plan"]
    rc = main(["diff", "--json", str(ref), "--", "+task=arith"])
    d = json.loads(capsys.readouterr().out)
    # the reference plan is a default compile of the embedded task (test_lock checks it is current)
    assert rc == 0 and d["tasks"] == [] and d["tasks_identical"] == 1
    assert d["new"] == "+task=arith" and d["n_instances"] == [200, 200]
