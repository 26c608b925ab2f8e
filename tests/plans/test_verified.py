"""Validation once per plan content (plans/plan/verified.py): a plan's bytes checked once are not re-checked; any
other bytes, another validator, or a bad record mean the full check."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans import DocRecord, PlanError, PlanReader, read_plan, write_plan
from lmeval.plans.plan import verified
from lmeval.plans.plan.validate import RecordValidator
from tests.plans.test_io import _arc_records
from tests.support import cli_in_process


class _Counting(RecordValidator):
    made = 0

    def __init__(self, *a: Any, **kw: Any) -> None:
        type(self).made += 1
        super().__init__(*a, **kw)


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The record on, in a cache of its own; full checks counted in ``_Counting.made``."""
    monkeypatch.setenv("LMEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LMEVAL_VERIFIED_PLANS", "1")
    monkeypatch.setattr(verified, "RecordValidator", _Counting)
    _Counting.made = 0
    return tmp_path / "cache" / verified.RECORD_NAME


def _plan(tmp_path: Path, name: str = "p.msgpack", codec: str = "none") -> Path:
    header, records = _arc_records(8)
    path = tmp_path / name
    write_plan(path, header, records, codec=codec)
    return path


def _forged(tmp_path: Path, name: str = "forged.msgpack") -> Path:
    """A plan whose hashes were recomputed after an edit: only the contract check refuses it."""
    header, records = _arc_records(8)
    first = records[0]
    assert isinstance(first, DocRecord)
    records[0] = replace(first, doc_hash="0" * 64)
    path = tmp_path / name
    write_plan(path, header, records, codec="none")
    return path


def test_a_plan_read_twice_is_fully_checked_once(tmp_path: Path, record: Path) -> None:
    plan = _plan(tmp_path)
    first = read_plan(plan)
    assert _Counting.made == 1 and record.is_file()
    assert read_plan(plan) == first
    assert _Counting.made == 1  # verified before: not checked again
    other = _plan(tmp_path, "other.msgpack", codec="zstd")  # same plan, other bytes: checked once more
    read_plan(other)
    read_plan(other)
    assert _Counting.made == 2


def test_the_check_costs_are_logged(tmp_path: Path, record: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = _plan(tmp_path)
    with caplog.at_level("DEBUG", logger="lmeval.plans"):
        read_plan(plan)
        read_plan(plan)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("plan check:")]
    assert len(lines) == 2
    assert "verified before" not in lines[0] and "(verified before)" in lines[1]


def test_a_failed_check_is_not_recorded(tmp_path: Path, record: Path) -> None:
    forged = _forged(tmp_path)
    for _ in range(2):
        with pytest.raises(PlanError, match="doc_hash"):
            read_plan(forged)
    assert _Counting.made == 2
    assert not record.exists()


def test_one_byte_changed_after_its_check_is_refused_by_score_and_execute(tmp_path: Path, record: Path) -> None:
    plan = _plan(tmp_path)
    read_plan(plan)  # checked and recorded
    data = bytearray(plan.read_bytes())
    at = data.index(b'"question"') if b'"question"' in data else len(data) // 2
    data[at + 1] ^= 0x01
    plan.write_bytes(bytes(data))
    rc, _, err = cli_in_process("execute", str(plan), "model.backend=fake", "--out", str(tmp_path / "res"))
    assert rc == 2, err
    assert "plan" in err
    # the same edit, its hashes recomputed (a forged plan): refused by the contract check itself
    forged = _forged(tmp_path, "p.msgpack")
    assert forged == plan
    rc, _, err = cli_in_process("execute", str(plan), "model.backend=fake", "--out", str(tmp_path / "res2"))
    assert rc == 2 and "doc_hash" in err, err


def test_score_reads_a_verified_plan_without_the_check(tmp_path: Path, record: Path) -> None:
    plan = _plan(tmp_path)
    res = tmp_path / "res"
    rc, _, err = cli_in_process("execute", str(plan), "model.backend=fake", "--out", str(res))
    assert rc == 0, err
    assert _Counting.made == 1
    rc, _, err = cli_in_process("score", str(res), "--quiet", "-v")
    assert rc == 0, err
    assert _Counting.made == 1
    forged = _forged(tmp_path, "p.msgpack")  # the plan replaced by a forged one: score refuses it
    assert forged == plan
    rc, _, err = cli_in_process("score", str(res), "--quiet")
    assert rc == 2


def test_another_validator_version_checks_again(tmp_path: Path, record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(tmp_path)
    read_plan(plan)
    monkeypatch.setattr(verified, "VALIDATOR_ID", "2-otherrules")
    read_plan(plan)
    assert _Counting.made == 2
    read_plan(plan)
    assert _Counting.made == 2
    assert verified.entry_key("a" * 64, "1-x") != verified.entry_key("a" * 64, "2-x")


def test_the_validator_id_follows_its_source() -> None:
    assert verified.VALIDATOR_ID.startswith(f"{verified.VALIDATOR_VERSION}-")
    assert verified.VALIDATOR_ID == verified._validator_id()


def _read_in_time(plan: Path, seconds: float = 20.0) -> None:
    done: list[BaseException | None] = []

    def go() -> None:
        try:
            read_plan(plan)
            done.append(None)
        except BaseException as e:  # reported below
            done.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert done == [None], "the read hung or failed"


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "garbage", "huge", "wrong_shape", "directory"])
def test_a_poisoned_record_falls_back_to_the_full_check(tmp_path: Path, record: Path, kind: str) -> None:
    plan = _plan(tmp_path)
    record.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(record)
    elif kind == "dev_zero":
        record.symlink_to("/dev/zero")
    elif kind == "garbage":
        record.write_bytes(b"\xff\x00not json{{{" * 100)
    elif kind == "huge":
        with plan.open("rb") as f:
            key = verified.entry_key(verified.file_digest(f))
        record.write_text(json.dumps({"format": verified.RECORD_FORMAT, "entries": [key]}) + " " * (2 << 20))
    elif kind == "wrong_shape":
        record.write_text(json.dumps({"format": verified.RECORD_FORMAT, "entries": {"a": [1, 2]}}))
    else:
        record.mkdir()
    _read_in_time(plan)
    _read_in_time(plan)
    if kind in ("fifo", "dev_zero", "directory"):  # never replaced: two full checks
        assert _Counting.made == 2
        assert not record.is_file() or record.is_symlink()
    else:  # ignored, then rewritten: the second read is verified
        assert _Counting.made == 1
        assert record.stat().st_size < verified.MAX_RECORD_BYTES


def test_off_switch(tmp_path: Path, record: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMEVAL_VERIFIED_PLANS", "0")
    plan = _plan(tmp_path)
    read_plan(plan)
    read_plan(plan)
    assert _Counting.made == 2 and not record.exists()


def test_a_verified_plan_changed_while_read_is_refused(tmp_path: Path, record: Path) -> None:
    plan = _plan(tmp_path)
    read_plan(plan)
    with PlanReader(plan) as r, pytest.raises(PlanError, match="changed while it was read"):
        for i, _ in enumerate(r.record_maps()):
            if i == 0:
                with plan.open("ab") as f:  # the same file, edited in place under the reader
                    f.write(b"\0")
    assert _Counting.made == 1
