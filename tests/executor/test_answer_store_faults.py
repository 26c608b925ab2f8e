"""The result store under faults (#63 item 3): two writers at once, a kill inside a store transaction, an entry
whose bytes changed, an entry of another model under this model's key, a store of another format version, an
unreadable store file and a full disk. No wrong answer is served; each problem is one warning line; the run
computes what it cannot trust and its rows equal a run without a store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from lmeval.executor import answerstore, execute
from lmeval.executor.answerkey import answer_key
from lmeval.plans.plan import read_plan
from lmeval.plans.results import read_manifest
from tests.executor import plantools as pt
from tests.executor.conftest import REPO, frame, run_cli

FAKE = ["model.backend=fake"]


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plans") / "p.msgpack"
    pt.build(path, [pt.arc_easy(6), pt.gsm8k(3), pt.rolling(2)])
    return path


@pytest.fixture(scope="module")
def truth(plan: Path, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """The rows of a run without a store."""
    out = tmp_path_factory.mktemp("truth") / "r"
    return frame(execute(str(plan), out=str(out), overrides=FAKE, progress=False, store="off")).drop("source")


def _run(plan: Path, out: Path, store: Path, *extra: str) -> tuple[pl.DataFrame, dict[str, int], list[str]]:
    """A CLI run: rows, manifest counts and its result-store warning lines."""
    p = run_cli("execute", str(plan), *FAKE, f"run.store={store}", "--out", str(out), "--no-progress", *extra)
    assert p.returncode == 0, p.stderr
    warnings = [line for line in p.stderr.splitlines() if line.startswith("warning: result store")]
    return frame(out), read_manifest(out).stats, warnings


def _db(store: Path) -> sqlite3.Connection:
    return sqlite3.connect(store / answerstore.DB_NAME, isolation_level=None)


def test_two_writers_at_once(plan: Path, truth: pl.DataFrame, tmp_path: Path) -> None:
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "lmeval", "execute", str(plan), *FAKE, f"run.store={store}", "--no-progress"]
    procs = [
        subprocess.Popen([*cmd, "--out", str(tmp_path / f"w{k}")], cwd=REPO, stderr=subprocess.PIPE, text=True)
        for k in range(2)
    ]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert not any("warning" in e for e in errs)
    for k in range(2):
        assert frame(tmp_path / f"w{k}").drop("source").equals(truth)
    rows, stats, warnings = _run(plan, tmp_path / "after", store)
    assert warnings == [] and stats["executed"] == 0 and rows.drop("source").equals(truth)
    assert _db(store).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_kill_inside_a_store_write_loses_the_batch_only(plan: Path, truth: pl.DataFrame, tmp_path: Path) -> None:
    store = tmp_path / "store"
    p = run_cli("execute", str(plan), *FAKE, f"run.store={store}", "--out", str(tmp_path / "killed"), "--no-progress",
                env={"LMEVAL_EXECUTOR_FAULT": "store-write:1"})  # fmt: skip
    assert p.returncode == -9
    assert _db(store).execute("SELECT count(*) FROM answers").fetchone() == (0,)  # the open transaction is gone
    rows, stats, warnings = _run(plan, tmp_path / "again", store)
    assert warnings == [] and stats["stored"] == 0 and rows.drop("source").equals(truth)
    rows, stats, warnings = _run(plan, tmp_path / "third", store)
    assert warnings == [] and stats["executed"] == 0 and rows.drop("source").equals(truth)


def _filled(plan: Path, tmp_path: Path) -> Path:
    store = tmp_path / "store"
    _run(plan, tmp_path / "first", store)
    return store


def test_a_changed_entry_is_not_served(plan: Path, truth: pl.DataFrame, tmp_path: Path) -> None:
    store = _filled(plan, tmp_path)
    con = _db(store)
    key, payload = con.execute("SELECT key, payload FROM answers ORDER BY key LIMIT 1").fetchone()
    forged = bytearray(payload)
    forged[-2] ^= 0x01  # one bit of the answer
    con.execute("UPDATE answers SET payload=? WHERE key=?", (bytes(forged), key))
    rows, stats, warnings = _run(plan, tmp_path / "again", store)
    assert len(warnings) == 1 and "failed verification" in warnings[0]
    assert stats["executed"] == 1 and rows.drop("source").equals(truth)
    rows, stats, warnings = _run(plan, tmp_path / "third", store)  # recomputed and stored again
    assert warnings == [] and stats["executed"] == 0


def test_another_models_entry_under_this_key_is_not_served(plan: Path, truth: pl.DataFrame, tmp_path: Path) -> None:
    store = _filled(plan, tmp_path)  # model A: the fake in its default dtype
    other = tmp_path / "other"
    _, _, _ = _run(plan, other, tmp_path / "store_b", "model.dtype=float16")  # model B's key, from its manifest
    key_b = read_manifest(other).store["model_key"]
    key_a = read_manifest(tmp_path / "first").store["model_key"]
    assert key_a != key_b
    inst = next(i for i in read_plan(plan).instances if i.request_type == "loglikelihood")
    con = _db(store)
    con.execute("UPDATE answers SET key=? WHERE key=?", (answer_key(key_b, inst, 1234), answer_key(key_a, inst, 1234)))
    rows, stats, warnings = _run(plan, tmp_path / "b", store, "model.dtype=float16")
    assert len(warnings) == 1 and "another model" in warnings[0]
    assert stats["stored"] == 0 and rows.filter(pl.col("instance_id") == inst.instance_id)["source"].to_list() == [
        "computed"
    ]


def test_a_store_of_another_format_version_is_not_used(plan: Path, truth: pl.DataFrame, tmp_path: Path) -> None:
    store = _filled(plan, tmp_path)
    _db(store).execute("UPDATE meta SET value='999' WHERE name='format_version'")
    rows, stats, warnings = _run(plan, tmp_path / "again", store)
    assert len(warnings) == 1 and "format version 999" in warnings[0]
    assert stats["stored"] == 0 and stats["executed"] == rows.height and rows.drop("source").equals(truth)


def test_an_unreadable_store_file_is_not_used(plan: Path, truth: pl.DataFrame, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / answerstore.DB_NAME).write_bytes(b"not a database, " * 512)
    rows, stats, warnings = _run(plan, tmp_path / "r", store)
    assert len(warnings) == 1 and "unreadable" in warnings[0]
    assert stats["executed"] == rows.height and rows.drop("source").equals(truth)


def test_a_full_disk_stops_storing_not_the_run(
    plan: Path, truth: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = answerstore.AnswerStore.open

    def tiny(folder, say=answerstore.warn):  # type: ignore[no-untyped-def]
        store = opened(folder, say)
        if store is not None:  # the file may not grow by a page more: SQLite's "database or disk is full"
            pages = store.con.execute("PRAGMA page_count").fetchone()[0]
            store.con.execute(f"PRAGMA max_page_count={pages}")
        return store

    monkeypatch.setattr(answerstore.AnswerStore, "open", staticmethod(tiny))
    out = execute(str(plan), out=str(tmp_path / "r"), overrides=FAKE, progress=False, store=str(tmp_path / "s"))
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning: result store")]
    assert len(warnings) == 1 and "cannot write" in warnings[0] and "full" in warnings[0]
    assert frame(out).drop("source").equals(truth) and read_manifest(out).stats["store_writes"] == 0
