"""A task summary's denormalised copies of its config (``plans.records.CONFIG_COPIES``): derived from the config
in one place when a header is assembled, and refused by every plan reader when a forged plan makes them differ."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from lmeval.cli import main
from lmeval.plans import PlanError, PlanReader, TaskSummary, read_header, read_plan, write_plan
from lmeval.plans.plan.records import CONFIG_COPIES
from tests.plans.test_io import _arc_records

CONFIG: dict[str, Any] = {
    "task": "arc_easy",
    "output_type": "multiple_choice",
    "num_fewshot": 0,
    "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
    "filter_list": [{"name": "none", "filter": [{"function": "take_first"}]}],
    "target_delimiter": " ",
}
FORGED: dict[str, Any] = {
    "name": "arc_hard",
    "output_type": "generate_until",
    "num_fewshot": 5,
    "metric_list": [{"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True}],
    "filter_list": [],
}


def _summary() -> TaskSummary:
    header, _ = _arc_records()
    t = header.tasks[0]
    return TaskSummary.of_config(dict(CONFIG), n_docs=t.n_docs, n_instances=t.n_instances, data_fingerprint="x")


def test_the_copies_come_from_the_config_and_round_trip() -> None:
    s = _summary()
    assert set(FORGED) == set(CONFIG_COPIES)
    assert {f: getattr(s, f) for f in CONFIG_COPIES} == {f: CONFIG[k] for f, k in CONFIG_COPIES.items()}
    assert s.config_disagreement() is None and TaskSummary.from_dict(s.to_dict()) == s
    # a config that does not hold a key (a plan built by a tool, not the compiler) leaves that field alone
    bare = dataclasses.replace(s, config={"task": "arc_easy"}, num_fewshot=3)
    assert TaskSummary.from_dict(bare.to_dict()).num_fewshot == 3


@pytest.mark.parametrize("field", sorted(FORGED))
def test_a_plan_whose_copy_disagrees_with_its_config_is_refused(
    field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header, records = _arc_records()
    forged = dataclasses.replace(_summary(), **{field: FORGED[field]})
    assert forged.config_disagreement() is not None
    path = tmp_path / "forged.msgpack"
    if field == "name":  # the records name the task too: forge the header's task and the records' together
        records = [dataclasses.replace(r, task="arc_hard") for r in records]
    write_plan(path, dataclasses.replace(header, tasks=[forged]), records)
    task = forged.name
    want = f"{path}: malformed plan header (ValueError: task {task}: {field} is {FORGED[field]!r}"[:120]
    for read in (read_header, read_plan, PlanReader):  # PlanReader: diff's reader
        with pytest.raises(PlanError) as e:
            read(str(path))
        msg = str(e.value)
        assert msg.startswith(want) and f"config's {CONFIG_COPIES[field]} is " in msg and "\n" not in msg, msg
    capsys.readouterr()
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}: malformed plan header" in err[0] and f"task {task}: {field} is" in err[0]
