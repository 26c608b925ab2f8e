"""Build small plans from real MMLU rows for diff tests, with the writer (no compiler needed).

The rendering follows lm-eval's multiple-choice layout (description, few-shot examples joined by the
few-shot delimiter, target delimiter before the answer), so each config knob changes a plan the way the
compiler would. Token ids are the UTF-8 bytes (shifted by ``id_shift`` to stand in for another tokenizer).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lmeval.plans.plan import DocRecord, InstanceRecord, ModelInfo, PlanHeader, TaskSummary, content_hash, write_plan
from tests.support import instance_record, jsonl_rows

LETTERS = ["A", "B", "C", "D"]


@functools.cache
def _rows(subject: str, split: str) -> tuple[dict[str, Any], ...]:
    return tuple(jsonl_rows(f"mmlu/{subject}", split))


def mmlu_rows(subject: str, split: str) -> list[dict[str, Any]]:
    return [dict(r) for r in _rows(subject, split)]


@dataclass(frozen=True)
class Spec:
    name: str
    subject: str
    limit: int | None = 6
    description: str | None = None  # None: lm-eval's MMLU description
    num_fewshot: int = 2
    seed: int = 1234
    target_delimiter: str = " "
    fewshot_delimiter: str = "\n\n"
    template: str = "{question}\n{options}\nAnswer:"
    output_type: str = "multiple_choice"
    until: tuple[str, ...] = ("\n\n",)
    metric: str = "acc"
    filters: tuple[str, ...] = ()
    id_shift: int = 0
    edit_doc: int | None = None  # doc id whose question text gets a suffix
    edit_choices: int | None = None  # doc id whose first choice gets a suffix
    edit_target: int | None = None  # doc id whose answer moves by one
    extra: dict[str, Any] = field(default_factory=dict)

    def desc(self) -> str:
        if self.description is not None:
            return self.description
        return f"The following are multiple choice questions (with answers) about {self.subject.replace('_', ' ')}.\n\n"


def _text(spec: Spec, row: dict[str, Any]) -> str:
    options = "\n".join(f"{L}. {c}" for L, c in zip(LETTERS, row["choices"], strict=False))
    return spec.template.format(question=row["question"].strip(), options=options)


def task_records(spec: Spec) -> tuple[TaskSummary, list[DocRecord | InstanceRecord]]:
    rows = mmlu_rows(spec.subject, "test")
    if spec.limit is not None:
        rows = rows[: spec.limit]
    pool = mmlu_rows(spec.subject, "dev")
    rnd = random.Random(spec.seed)
    recs: list[DocRecord | InstanceRecord] = []
    n_inst = 0
    for doc_id, row in enumerate(rows):
        row = dict(row)
        if doc_id == spec.edit_doc:
            row["question"] = row["question"] + " (revised)"
        if doc_id == spec.edit_choices:
            row["choices"] = [row["choices"][0] + " only", *row["choices"][1:]]
        if doc_id == spec.edit_target:
            row["answer"] = (row["answer"] + 1) % 4
        shots = rnd.sample(range(len(pool)), spec.num_fewshot)
        examples = [_text(spec, pool[i]) + spec.target_delimiter + LETTERS[pool[i]["answer"]] for i in shots]
        ctx = spec.desc() + spec.fewshot_delimiter.join([*examples, _text(spec, row)])
        choices = LETTERS[: len(row["choices"])]
        recs.append(
            DocRecord(
                spec.name,
                doc_id,
                row,
                row["answer"],
                choices if spec.output_type == "multiple_choice" else None,
                shots,
                content_hash(row),
            )
        )
        if spec.output_type == "multiple_choice":
            for idx, ch in enumerate(choices):
                cont = spec.target_delimiter + ch
                recs.append(_inst(spec, doc_id, idx, ctx, cont, None))
                n_inst += 1
        else:
            gk = {"until": list(spec.until), "do_sample": False}
            recs.append(_inst(spec, doc_id, 0, ctx, None, gk))
            n_inst += 1
    config = {
        "task": spec.name,
        "dataset_path": "cais/mmlu",
        "dataset_name": spec.subject,
        "test_split": "test",
        "fewshot_split": "dev",
        "description": spec.desc(),
        "doc_to_text": spec.template,
        "target_delimiter": spec.target_delimiter,
        "fewshot_delimiter": spec.fewshot_delimiter,
        "fewshot_config": {"sampler": "default", "random_seed": spec.seed},
        "num_fewshot": spec.num_fewshot,
        "output_type": spec.output_type,
        **spec.extra,
    }
    if spec.output_type != "multiple_choice":
        config["generation_kwargs"] = {"until": list(spec.until), "do_sample": False}
    summary = TaskSummary(
        name=spec.name,
        output_type=spec.output_type,
        n_docs=len(rows),
        n_instances=n_inst,
        num_fewshot=spec.num_fewshot,
        task_hash="",
        data_fingerprint=content_hash(rows),
        version=1,
        metric_list=[{"metric": spec.metric, "aggregation": "mean", "higher_is_better": True}],
        filter_list=[{"name": f, "filter": [{"function": f}]} for f in spec.filters],
        groups=["mmlu"],
        config=config,
    )
    return summary, recs


def _inst(spec: Spec, doc_id: int, idx: int, ctx: str, cont: str | None, gk: dict[str, Any] | None) -> InstanceRecord:
    rt = "loglikelihood" if cont is not None else "generate_until"
    ctx_ids = [b + spec.id_shift for b in ctx.encode()]
    cont_ids = [b + spec.id_shift for b in cont.encode()] if cont is not None else None
    return instance_record(spec.name, doc_id, idx, rt, ctx, cont, gk, (ctx_ids, cont_ids))


def build(
    path: Path,
    specs: list[Spec],
    run: dict[str, Any] | None = None,
    tokenizer_hash: str = "bytes-v1",
    reverse_docs: bool = False,
    codec: str = "zstd",
) -> Path:
    summaries: list[TaskSummary] = []
    records: list[DocRecord | InstanceRecord] = []
    for s in specs:
        summary, recs = task_records(s)
        if reverse_docs:
            groups: list[list[DocRecord | InstanceRecord]] = []
            for r in recs:
                if isinstance(r, DocRecord):
                    groups.append([])
                groups[-1].append(r)
            recs = [r for g in reversed(groups) for r in g]
        summaries.append(summary)
        records.extend(recs)
    config = {
        "run": {"num_fewshot": None, "seed": 1234, "system_instruction": None, **(run or {})},
        "model": {"name": "tiny"},
        "task": [s.name for s in specs],
    }
    header = PlanHeader(
        config=config,
        model=ModelInfo(name="tiny", tokenizer="tiny", tokenizer_hash=tokenizer_hash),
        tasks=summaries,
        lmeval_version="0.1.0",
    )
    write_plan(path, header, records, codec)
    return path


def spec(name: str = "mmlu_anatomy", subject: str = "anatomy", **kw: Any) -> Spec:
    return Spec(name=name, subject=subject, **kw)


def with_(s: Spec, **kw: Any) -> Spec:
    return replace(s, **kw)
