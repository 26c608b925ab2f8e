"""A chained run's folder is the chain wherever it lies (#64): chain.json records every stage's plan and results
relative to the folder, stage 1's plan kept there too, so a folder moved elsewhere is still shown and diffed; a
chain.json of an older lmeval (absolute paths) is read while its paths resolve, and found again in the moved
folder, else refused in one line naming the chain file, the stage and the field. Fake backend, as
tests/cli/test_chain.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lmeval.plans import read_chain
from tests.cli.chain_task import write_chain_task
from tests.support import cli_in_process as cli

FAKE = ["run.apply_chat_template=true", "model.backend=fake", "run.tasks=[convo]"]


def _run(tasks: Path, out: Path) -> None:
    rc, _, err = cli("run", f"run.include_path={tasks}", *FAKE, "--out", str(out), "--plan-out",
                     str(out.parent / f"{out.name}.msgpack"), "--no-progress")  # fmt: skip
    assert rc == 0, err


def test_moved_chain_is_shown_and_diffed(tmp_path: Path) -> None:
    a, b = tmp_path / "made" / "a", tmp_path / "made" / "b"
    _run(write_chain_task(tmp_path / "ta"), a)
    _run(write_chain_task(tmp_path / "tb", edit={1: "Rewrite it as a haiku."}), b)
    record = json.loads((a / "chain.json").read_text())
    for s in record["stages"]:  # nothing the record names lies outside the folder, nor is absolute
        assert not Path(s["plan"]).is_absolute() and ".." not in Path(s["plan"]).parts, s
        assert (a / s["plan"]).is_file() and (a / s["results"] / "manifest.json").is_file()
    _, before, _ = cli("show", str(a))
    moved = shutil.move(str(a), str(tmp_path / "elsewhere" / "a"))
    (tmp_path / "made" / "a.msgpack").unlink()  # --plan-out's copy of stage 1 gone too: the folder holds its own
    rc, shown, err = cli("show", moved)
    assert rc == 0, err
    assert "3 stages" in shown and shown.replace(moved, str(a)) == before
    rc, out, err = cli("diff", moved, str(b))
    assert rc == 1, err
    assert "prompts first differ at stage 2 (turn 2): task convo, doc 1" in out
    rc, out, err = cli("diff", moved, moved)
    assert rc == 0 and "identical chains: 3 stages" in out, err


def test_older_chain_json_with_absolute_paths(tmp_path: Path) -> None:
    root = tmp_path / "run"
    _run(write_chain_task(tmp_path / "t"), root)
    data = json.loads((root / "chain.json").read_text())
    for s in data["stages"]:  # as lmeval wrote it before #64: every plan by its absolute path
        s["plan"] = str((root / s["plan"]).resolve())
    (root / "chain.json").write_text(json.dumps(data), encoding="utf-8")
    assert cli("show", str(root))[0] == 0
    moved = Path(shutil.move(str(root), str(tmp_path / "moved")))
    rc, shown, err = cli("show", str(moved))  # the absolute paths are gone; the files are in the moved folder
    assert rc == 0 and "3 stages" in shown, err
    assert cli("diff", str(moved), str(moved))[0] == 0
    # a stage whose absolute plan is gone and not in the folder: one line naming the chain file, stage and field
    gone = read_chain(moved).stages[0].plan
    (moved / Path(gone).name).unlink()
    rc, _, err = cli("show", str(moved))
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{moved / 'chain.json'}: stage 1: plan: {gone} is not there" in err
