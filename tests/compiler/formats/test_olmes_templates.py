"""Prompt formats (#38) against OLMES' templates written out here from the paper and olmo-eval's reference
code (``make_mcq_prompt`` / ``make_cloze_prompt``; per-task question prefixes from catwalk's ``*Std`` tasks),
not from lmeval's code: every shipped multiple-choice task, on the reference data, compiled as ``@mcf``,
``@cf`` and ``@gen``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lmeval import compiler
from lmeval.plans import DocRecord, InstanceRecord
from tests.support import jsonl_rows

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def make_mcq_prompt(question: str, choices: list[str], question_prefix: str = "Question: ") -> str:
    """olmo-eval's make_mcq_prompt at its defaults: answer_prefix "Answer:", label " A." and a space."""
    choices_text = "\n".join(f" {LETTERS[i]}. {text}" for i, text in enumerate(choices))
    return f"{question_prefix}{question}\n{choices_text}\nAnswer:"


def make_cloze_prompt(question: str, question_prefix: str = "Question: ") -> str:
    return f"{question_prefix}{question}\nAnswer:"


@dataclass(frozen=True)
class Case:
    task: str  # the conf/task name selected
    plan_task: str  # the task name in the plan (an MMLU subject)
    data: tuple[str, str]  # reference data file: <name>/<split>
    question: Callable[[dict[str, Any]], str]
    choices: Callable[[dict[str, Any]], list[str]]
    gold: Callable[[dict[str, Any]], int]
    prefix: Callable[[dict[str, Any]], str] = lambda d: "Question: "
    description: str = ""


def _boolq_gold(d: dict[str, Any]) -> int:
    return int(d["label"]) if "label" in d else int(bool(d["answer"]))


CASES = [
    Case("arc_easy", "arc_easy", ("arc_easy", "test"), lambda d: d["question"], lambda d: d["choices"]["text"],
         lambda d: d["choices"]["label"].index(d["answerKey"])),
    Case("arc_challenge", "arc_challenge", ("arc_challenge", "test"), lambda d: d["question"],
         lambda d: d["choices"]["text"], lambda d: d["choices"]["label"].index(d["answerKey"])),
    # catwalk's PiQAMCStd: make_mcq_prompt(goal, [sol1, sol2], question_prefix="Goal: ")
    Case("piqa", "piqa", ("piqa", "validation"), lambda d: d["goal"], lambda d: [d["sol1"], d["sol2"]],
         lambda d: int(d["label"]), prefix=lambda d: "Goal: "),
    Case("boolq", "boolq", ("boolq", "validation"), lambda d: d["question"] + "?", lambda d: ["no", "yes"],
         _boolq_gold, prefix=lambda d: f"{d['passage']}\nQuestion: "),
    Case("winogrande", "winogrande", ("winogrande", "validation"), lambda d: d["sentence"],
         lambda d: [d["option1"], d["option2"]], lambda d: int(d["answer"]) - 1),
    Case("mmlu_anatomy", "mmlu_anatomy", ("mmlu/anatomy", "test"), lambda d: d["question"].strip(),
         lambda d: d["choices"], lambda d: int(d["answer"]),
         description="The following are multiple choice questions (with answers) about anatomy.\n\n"),
]  # fmt: skip
N = 4


def _compile(name: str, data: Path, *extra: str) -> tuple[Any, list[DocRecord], list[InstanceRecord]]:
    header, records = compiler.compile_plan([f"run.tasks=[{name}]", f"run.data_dir={data}", f"run.limit={N}", *extra])
    docs = [r for r in records if isinstance(r, DocRecord)]
    insts = [r for r in records if isinstance(r, InstanceRecord)]
    return header, docs, insts


def _rows(case: Case) -> list[dict[str, Any]]:
    return jsonl_rows(case.data[0], case.data[1], limit=N)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.task)
def test_mcf_is_olmes_character_for_character(case: Case, data: Path) -> None:
    header, docs, insts = _compile(f"{case.task}@mcf", data)
    assert [t.name for t in header.tasks] == [f"{case.plan_task}@mcf"]
    assert header.tasks[0].config["format"]["name"] == "mcf"
    for doc_id, row in enumerate(_rows(case)):
        want = case.description + make_mcq_prompt(case.question(row), case.choices(row), case.prefix(row))
        mine = sorted((i for i in insts if i.doc_id == doc_id), key=lambda i: i.idx)
        assert [i.context for i in mine] == [want] * len(case.choices(row))
        assert [i.continuation for i in mine] == [f" {LETTERS[k]}" for k in range(len(case.choices(row)))]
        assert docs[doc_id].target == case.gold(row)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.task)
def test_gen_generates_from_the_mcf_prompt(case: Case, data: Path) -> None:
    header, docs, insts = _compile(f"{case.task}@gen", data)
    task = header.tasks[0]
    assert task.name == f"{case.plan_task}@gen" and task.output_type == "generate_until"
    assert [m["metric"] for m in task.config["metric_list"]] == ["exact_match"]
    for doc_id, row in enumerate(_rows(case)):
        want = case.description + make_mcq_prompt(case.question(row), case.choices(row), case.prefix(row))
        (inst,) = [i for i in insts if i.doc_id == doc_id]
        assert inst.request_type == "generate_until" and inst.context == want
        assert docs[doc_id].choices is not None
        assert docs[doc_id].choices[int(docs[doc_id].target)] == LETTERS[case.gold(row)]  # the label it must say


def test_cf_of_a_letter_task_is_olmes_cloze(data: Path) -> None:
    """MMLU is written with letters in lm-eval: ``@cf`` scores each choice's text after OLMES' cloze prompt."""
    case = CASES[-1]
    _, docs, insts = _compile("mmlu_anatomy@cf", data)
    for doc_id, row in enumerate(_rows(case)):
        mine = sorted((i for i in insts if i.doc_id == doc_id), key=lambda i: i.idx)
        k = len(case.choices(row))
        cond, uncond = mine[:k], mine[k:]
        assert {i.context for i in cond} == {case.description + make_cloze_prompt(case.question(row))}
        assert [i.continuation for i in cond] == [f" {c}" for c in case.choices(row)]
        # acc_pmi: each choice again after OLMES' unconditional prompt, "Answer:" alone
        assert [(i.context, i.continuation) for i in uncond] == [("Answer:", f" {c}") for c in case.choices(row)]
        assert docs[doc_id].target == case.gold(row)


@pytest.mark.parametrize("task", ["arc_easy", "piqa", "winogrande", "boolq"])
def test_cf_of_a_cloze_task_keeps_its_requests(task: str, data: Path) -> None:
    """A task written as cloze keeps every request of the task as written in ``@cf`` (its name and metrics
    are the format's)."""
    _, _, plain = _compile(task, data)
    header, _, cf = _compile(f"{task}@cf", data)
    key = [(i.doc_id, i.idx, i.context, i.continuation, i.context_ids, i.continuation_ids) for i in plain]
    by_doc: dict[int, int] = {}
    for i in plain:
        by_doc[i.doc_id] = by_doc.get(i.doc_id, 0) + 1
    conditional = [i for i in cf if i.idx < by_doc[i.doc_id]]
    extra = [i for i in cf if i.idx >= by_doc[i.doc_id]]
    assert [(i.doc_id, i.idx, i.context, i.continuation, i.context_ids, i.continuation_ids) for i in conditional] == key
    metrics = {m["metric"] for m in header.tasks[0].config["metric_list"]}
    assert {"acc", "acc_norm", "acc_per_token"} <= metrics
    if task == "winogrande":  # partial scoring: one context per choice, no unconditional requests
        assert "acc_pmi" not in metrics and extra == []
    else:  # acc_pmi: every choice's continuation once more after "Answer:"
        assert "acc_pmi" in metrics
        want = [(i.doc_id, i.idx + by_doc[i.doc_id], "Answer:", i.continuation) for i in plain]
        assert [(i.doc_id, i.idx, i.context, i.continuation) for i in extra] == want
