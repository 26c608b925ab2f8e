"""The release lock: every shipped task config compiles to the hashes in lock/lock.json.

If ``test_lock_matches_every_shipped_task`` fails, prompts (or scoring) changed. If that was intended, run
``lmeval lock --update``, commit lock/lock.json with the change and explain it in CHANGELOG.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lmeval.lock.build import SKIP, check, shipped_configs
from lmeval.lock.lockfile import LOCK_PATH, REFERENCE_TASK, Lock, compare_locks, load_lock, shown_path
from lmeval.plans.errors import UserError
from lmeval.plans.plan import read_header

DATA = Path(os.environ.get("LMEVAL_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
ONE_CHAR = 'task.arith.doc_to_text="Question: What is {{a}} {{op}} {{b}}?\nAnswer: "'  # one trailing space added


def test_lock_covers_every_shipped_config() -> None:
    lock = load_lock()
    plain = {c for c in lock.configs if "@" not in c}
    assert plain | set(lock.skipped) == set(shipped_configs())
    assert set(lock.skipped) == set(SKIP)
    # every multiple-choice config in each prompt format (compiler/formats), and no other config
    mc = {"arc_challenge", "arc_easy", "boolq", "mmlu", "piqa", "winogrande"}
    assert set(lock.configs) - plain == {f"{c}@{f}" for c in mc for f in ("cf", "mcf", "gen")}
    for name, c in lock.configs.items():
        assert c["tasks"], name
        for t in c["tasks"]:
            assert lock.tasks[t]["config"] == name and lock.tasks[t]["n_instances"] > 0
    assert len(lock.configs["mmlu"]["tasks"]) == 57  # the group is locked per subject
    assert len(lock.configs["mmlu@gen"]["tasks"]) == 57 and "mmlu@gen" in lock.groups
    assert lock.settings["limit"] and lock.settings["tokenizer_hash"]


def test_reference_plan_matches_lock() -> None:
    lock = load_lock()
    header = read_header(LOCK_PATH.parent / lock.reference["plan"])
    assert header.plan_hash == lock.reference["plan_hash"]
    assert header.task(REFERENCE_TASK).task_hash == lock.tasks[REFERENCE_TASK]["task_hash"]


def test_lock_matches_every_shipped_task() -> None:
    result = check(LOCK_PATH, DATA)
    assert result.ok, "\n" + result.summary()
    summary = result.summary()
    assert summary.startswith("lock ok: ") and summary.endswith(f"groups match {shown_path(LOCK_PATH)}")


def test_one_character_template_change_is_caught() -> None:
    result = check(LOCK_PATH, DATA, extra=[ONE_CHAR], configs=[REFERENCE_TASK])
    assert not result.ok
    summary = result.summary()
    lines = summary.splitlines()
    assert lines[0] == "lock check failed: 1 of 1 task hashes moved"
    assert lines[1].startswith("  task arith: task hash ")
    # the summary names the config key and shows the trailing space
    assert (
        "config.doc_to_text: 'Question: What is {{a}} {{op}} {{b}}?↵Answer:' → "
        "'Question: What is {{a}} {{op}} {{b}}?↵Answer:␣'" in summary
    )
    # and the prompt-by-prompt diff against the reference plan
    assert "prompt template: 200 docs, 200 instances" in summary
    assert "-Answer:\n+Answer:␣" in summary
    assert f"commit {shown_path(LOCK_PATH)} with them" in summary and "CHANGELOG.md" in summary
    assert "lmeval lock --update" not in result.summary(advice=False)


def test_compare_reports_added_removed_and_settings() -> None:
    entry = {
        "config": "x",
        "task_hash": "a" * 64,
        "n_docs": 1,
        "n_instances": 2,
        "data_fingerprint": "d",
        "summary": {"config": {"description": "A"}},
    }
    old = Lock(settings={"limit": 100}, tasks={"t1": entry, "t2": entry})
    moved = dict(entry, task_hash="b" * 64, summary={"config": {"description": "B"}})
    new = Lock(settings={"limit": 50}, tasks={"t1": moved, "t3": entry})
    res = compare_locks(old, new)
    assert not res.ok
    assert [(m.name, m.status) for m in res.moved] == [("t1", "moved"), ("t2", "removed"), ("t3", "added")]
    text = res.summary()
    assert "config.description: 'A' → 'B'" in text and "settings: limit: 100 → 50" in text
    same = dict(entry, task_hash="c" * 64)
    text = compare_locks(Lock({}, tasks={"t": entry}), Lock({}, tasks={"t": same})).summary()
    assert "same task config and data: the compiler renders these prompts differently now" in text
    assert compare_locks(old, old).ok


def test_bad_lock_file(tmp_path: Path) -> None:
    bad = tmp_path / "lock.json"
    bad.write_text(json.dumps({"format": "something"}))
    with pytest.raises(UserError, match="not an lmeval lock"):
        load_lock(bad)
    with pytest.raises(UserError, match="no lock file"):
        load_lock(tmp_path / "missing.json")
    bad.write_text("{")
    with pytest.raises(UserError, match="cannot read the lock"):
        load_lock(bad)


def test_lock_cli_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from lmeval.cli import main

    assert main(["lock", "--limit", "5"]) == 2
    assert "--limit only applies with --update" in capsys.readouterr().err
    assert main(["lock", "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_lock_update_rewrites_a_stale_lock_to_the_committed_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lmeval lock --update`` on a lock whose arith hash is stale names the moved task and writes back exactly
    the committed lock and reference plan (the update is deterministic and complete)."""
    from lmeval.cli import main

    committed = json.loads(LOCK_PATH.read_text())
    stale = json.loads(LOCK_PATH.read_text())
    stale["tasks"][REFERENCE_TASK]["task_hash"] = "0" * 64
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps(stale))
    assert main(["lock", "--update", "--lock", str(lock), "--data-dir", str(DATA)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "lock check failed: 1 of " + str(len(committed["tasks"])) + " task hashes moved"
    assert out[1].startswith(f"  task {REFERENCE_TASK}: task hash 000000000000 → ")
    assert out[-1] == str(lock)
    assert json.loads(lock.read_text()) == committed
    assert lock.read_bytes() == LOCK_PATH.read_bytes()
    ref = committed["reference"]["plan"]
    assert (tmp_path / ref).read_bytes() == (LOCK_PATH.parent / ref).read_bytes()


def test_installed_lock_needs_a_data_dir_and_is_not_rewritten_in_place(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Installed (no checkout around the package) there is no ../shared/data to default to, and the shipped
    lock inside site-packages is not rewritten: both are one-line errors, exit 2."""
    from lmeval.cli import main
    from lmeval.lock import build

    monkeypatch.setattr(build, "IS_CHECKOUT", False)
    monkeypatch.delenv("LMEVAL_DATA_DIR", raising=False)
    assert main(["lock"]) == 2
    err = capsys.readouterr().err
    assert "no reference data directory: pass --data-dir DIR or set LMEVAL_DATA_DIR" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    before = LOCK_PATH.read_bytes()
    assert main(["lock", "--update", "--data-dir", str(DATA)]) == 2
    err = capsys.readouterr().err
    assert "belongs to the installed lmeval package" in err and "--lock FILE" in err
    assert LOCK_PATH.read_bytes() == before
    monkeypatch.setenv("LMEVAL_DATA_DIR", str(tmp_path / "nowhere"))
    assert main(["lock"]) == 2
    assert "no such directory" in capsys.readouterr().err
