"""``lmeval diff`` on a chat-templated plan's messages (``InstanceRecord.messages``): a plan whose generations
keep different messages than another's, with the same rendered prompts, is a changed prompt to re-execute."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lmeval.diff import diff_plans
from lmeval.plans.plan import DocRecord, InstanceRecord, read_plan, write_plan
from tests.executor import plantools as pt


def test_changed_messages_are_a_changed_prompt(tmp_path: Path) -> None:
    new = pt.compiled(tmp_path / "new.msgpack", "+task=gsm8k", "run.limit=2", "run.apply_chat_template=true")
    plan = read_plan(new)
    assert all(i.messages for i in plan.instances)
    inst_by_doc = {i.doc_id: i for i in plan.instances}
    records: list[DocRecord | InstanceRecord] = []
    for d in plan.docs:
        i = inst_by_doc[d.doc_id]
        assert i.messages is not None
        moved = [*i.messages[:-1], {"role": "user", "content": "Q: " + i.messages[-1]["content"]}]
        records += [d, replace(i, messages=moved) if d.doc_id == 1 else i]
    old = tmp_path / "old.msgpack"
    write_plan(old, plan.header, records)
    assert read_plan(old).header.tasks[0].task_hash != plan.header.tasks[0].task_hash  # messages are hashed
    r = diff_plans(str(old), str(new))
    (t,) = r.tasks
    assert t.instances_changed == 1 and t.to_execute == 1
    assert {c.cause for c in t.causes} == {"prompt"}
