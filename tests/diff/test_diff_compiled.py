"""Cause classification on real compiled plans: the embedded ``arith`` task, one config change per pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmeval.compiler import compile_plan
from lmeval.diff import diff_plans, render_text
from lmeval.plans.plan import write_plan

BASE = ["+task=arith"]
DOC_TO_TEXT = "Question: What is {{a}} {{op}} {{b}}?\nAnswer:"

CASES = [
    # (override, expected causes of the arith task, scoring only)
    ("run.fewshot_random_seed=99", {"fewshot"}, False),
    ("run.num_fewshot=1", {"fewshot"}, False),
    ('+task.arith.description="Solve each problem.\n\n"', {"description"}, False),
    ('+task.arith.fewshot_delimiter="\n\n\n"', {"delimiters"}, False),
    ('+task.arith.target_delimiter="  "', {"delimiters"}, False),
    (f'task.arith.doc_to_text="{DOC_TO_TEXT} "', {"template"}, False),
    ('run.system_instruction="Be exact."', {"system_instruction"}, False),
    ("run.apply_chat_template=true", {"chat_template"}, False),
    ("task.arith.generation_kwargs.max_gen_toks=16", {"generation_kwargs"}, False),
    ("task.arith.metric_list.0.ignore_case=false", {"scoring"}, True),
    ("task.arith.filter_list.0.name=strict", {"scoring"}, True),
]


@pytest.fixture(scope="module")
def base_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compiled") / "base.msgpack"
    write_plan(out, *compile_plan(BASE))
    return out


@pytest.mark.parametrize("override,expected,scoring_only", CASES, ids=[c[0][:40] for c in CASES])
def test_cause_of_one_config_change(
    base_plan: Path, tmp_path: Path, override: str, expected: set[str], scoring_only: bool
) -> None:
    new = tmp_path / "new.msgpack"
    write_plan(new, *compile_plan([*BASE, override]))
    r = diff_plans(base_plan, new, show=1)
    assert [t.name for t in r.tasks] == ["arith"], render_text(r)
    td = r.tasks[0]
    got = {c.cause for c in td.causes}
    assert got == expected, render_text(r)
    assert td.scoring_only is scoring_only
    if scoring_only:
        assert td.records_identical and td.to_execute == 0 and r.prompts == []
    elif expected != {"generation_kwargs"}:
        assert td.instances_changed > 0 and r.prompts and r.prompts[0].diff.startswith("--- ")
