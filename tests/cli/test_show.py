"""``lmeval show``: header, counts, examples and the lm-eval Instance JSONL of a real compiled plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmeval.cli import main
from lmeval.plans import read_plan


@pytest.fixture(scope="module")
def arith_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("show") / "arith.msgpack"
    assert main(["compile", "+task=arith", "run.limit=12", f"run.out={out}"]) == 0
    return out


def test_show_prints_header_counts_and_examples(arith_plan: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(arith_plan), "-n", "2"]) == 0
    out = capsys.readouterr().out
    plan = read_plan(arith_plan)
    assert plan.header.plan_hash in out
    assert f"{plan.header.n_docs} docs, {plan.header.n_instances} instances" in out
    assert out.count("── arith doc") == 2
    assert plan.instances[0].context in out


def test_show_jsonl_matches_plan_instances(arith_plan: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(arith_plan), "--jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    plan = read_plan(arith_plan)
    assert len(rows) == len(plan.instances) == 12
    for row, inst in zip(rows, plan.instances, strict=True):
        assert (row["task"], row["doc_id"], row["idx"], row["request_type"]) == (
            inst.task,
            inst.doc_id,
            inst.idx,
            inst.request_type,
        )
        assert row["arguments"] == [inst.context, inst.generation_kwargs]
        assert row["repeats"] == inst.repeats
        assert row["n_context_tokens"] == len(inst.context_ids or [])


def test_show_refuses_modified_plan(arith_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lmeval.plans.plan.io import recode_plan

    plain = tmp_path / "plain.msgpack"
    recode_plan(arith_plan, plain, "none")  # records stored uncompressed, so the edit below is a text edit
    data = bytearray(plain.read_bytes())
    i = data.rindex(b"Question")
    data[i] = ord("q")
    bad = tmp_path / "bad.msgpack"
    bad.write_bytes(bytes(data))
    assert main(["show", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # streamed records are validated as they are read (plans/plan/validate.py), so the edited context is refused by
    # its recomputed request hash before the end-of-stream plan hash check would see it
    assert len(err) == 1 and ("hash mismatch" in err[0] or "is not the hash of the request's content" in err[0])
    assert "doc 11" in err[0] or "hash mismatch" in err[0]


def test_show_unknown_task(arith_plan: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(arith_plan), "--task", "nope"]) == 2
    assert "no task 'nope'" in capsys.readouterr().err
