"""Build small plans from real data rows for the executor tests (until/unless the compiler is used).

Prompts follow lm-eval's task layouts (arc_easy: "Question: ...\\nAnswer:" + " choice"; gsm8k:
"Question: ...\\nAnswer:" generating until "Question:"; winogrande: partial evaluation), tokenised with the
tiny model's tokenizer by lm-eval's ``_encode_pair`` rule (trailing context spaces move to the
continuation; the continuation is the joint encoding minus the context's tokens).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from lmeval.common.modelref import tokenizer_hash
from lmeval.common.tinymodel import ensure_tiny_model
from lmeval.plans.plan import DocRecord, InstanceRecord, ModelInfo, PlanHeader, TaskSummary, write_plan
from tests.support import data_dir, instance_record, jsonl_rows

REPO = Path(__file__).resolve().parents[2]
CONF_MODEL = REPO / "conf" / "model"


def rows(name: str, split: str, limit: int, start: int = 0) -> list[dict[str, Any]]:
    return jsonl_rows(name, split, limit, start)


@cache
def tokenizer() -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(ensure_tiny_model() / "tokenizer.json"))


def encode(text: str) -> list[int]:
    return list(tokenizer().encode(text, add_special_tokens=False).ids) if text else []


def encode_pair(context: str, continuation: str) -> tuple[list[int], list[int]]:
    n = len(context) - len(context.rstrip())
    if n:
        continuation = context[-n:] + continuation
        context = context[:-n]
    whole = encode(context + continuation)
    ctx = encode(context)
    return ctx, whole[len(ctx) :]


def instance(
    task: str,
    doc_id: int,
    idx: int,
    request_type: str,
    context: str,
    continuation: str | None = None,
    generation_kwargs: dict[str, Any] | None = None,
    repeats: int = 1,
    with_ids: bool = True,
) -> InstanceRecord:
    ctx_ids: list[int] | None
    cont_ids: list[int] | None
    if not with_ids:
        ctx_ids = cont_ids = None
    elif request_type == "loglikelihood":
        ctx_ids, cont_ids = encode_pair(context, continuation or "")
    else:
        ctx_ids, cont_ids = encode(context), None
    return instance_record(task, doc_id, idx, request_type, context, continuation, generation_kwargs,
                           (ctx_ids, cont_ids), repeats)  # fmt: skip


Task = tuple[str, str, list[tuple[DocRecord, list[InstanceRecord]]]]  # name, output_type, docs


def arc_easy(n: int, start: int = 0, name: str = "arc_easy", prefix: str = "", with_ids: bool = True) -> Task:
    docs = []
    for doc_id, row in enumerate(rows("arc_easy", "test", n, start)):
        ctx = f"{prefix}Question: {row['question']}\nAnswer:"
        choices = row["choices"]["text"]
        insts = [
            instance(name, doc_id, i, "loglikelihood", ctx, f" {c}", with_ids=with_ids) for i, c in enumerate(choices)
        ]
        target = row["choices"]["label"].index(row["answerKey"])
        docs.append((DocRecord(name, doc_id, row, target, choices), insts))
    return name, "multiple_choice", docs


def gsm8k(
    n: int,
    max_gen_toks: int = 24,
    start: int = 0,
    name: str = "gsm8k",
    extra: dict[str, Any] | None = None,
    repeats: int = 1,
    fewshot: int = 0,
) -> Task:
    shots = rows("gsm8k", "train", fewshot)
    prefix = "".join(f"Question: {s['question']}\nAnswer: {s['answer']}\n\n" for s in shots)
    docs = []
    kwargs = {
        "until": ["Question:", "</s>", "<|im_end|>"],
        "do_sample": False,
        "max_gen_toks": max_gen_toks,
        **(extra or {}),
    }
    for doc_id, row in enumerate(rows("gsm8k", "test", n, start)):
        ctx = f"{prefix}Question: {row['question']}\nAnswer:"
        inst = instance(name, doc_id, 0, "generate_until", ctx, generation_kwargs=kwargs, repeats=repeats)
        docs.append((DocRecord(name, doc_id, row, row["answer"].split("####")[-1].strip()), [inst]))
    return name, "generate_until", docs


def winogrande(n: int, name: str = "winogrande") -> Task:
    docs = []
    for doc_id, row in enumerate(rows("winogrande", "validation", n)):
        cut = row["sentence"].index("_")
        cont = " " + row["sentence"][cut + 1 :].strip()
        insts = [
            instance(name, doc_id, i, "loglikelihood", row["sentence"][:cut] + opt, cont)
            for i, opt in enumerate((row["option1"], row["option2"]))
        ]
        docs.append((DocRecord(name, doc_id, row, int(row["answer"]) - 1, [row["option1"], row["option2"]]), insts))
    return name, "multiple_choice", docs


def rolling(n: int, name: str = "gsm8k_rolling") -> Task:
    docs = []
    for doc_id, row in enumerate(rows("gsm8k", "test", n)):
        text = row["question"] + "\n" + row["answer"]
        docs.append((DocRecord(name, doc_id, row, None), [instance(name, doc_id, 0, "loglikelihood_rolling", text)]))
    return name, "loglikelihood_rolling", docs


def tiny_model_config(**changes: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(CONF_MODEL / "tiny.yaml"), resolve=True)
    assert isinstance(cfg, dict)
    cfg.update(changes)
    return cfg  # type: ignore[return-value]


def build(
    path: str | os.PathLike[str],
    tasks: Sequence[Task],
    model: dict[str, Any] | None = None,
    extra_config: dict[str, Any] | None = None,
) -> PlanHeader:
    model_cfg = model if model is not None else tiny_model_config()
    summaries = []
    records: list[DocRecord | InstanceRecord] = []
    for name, output_type, docs in tasks:
        n_inst = sum(len(i) for _, i in docs)
        summaries.append(
            TaskSummary(name, output_type, len(docs), n_inst, 0, "", "", 1, [{"metric": "acc"}], [], [], {"task": name})
        )
        for d, insts in docs:
            records.append(d)
            records.extend(insts)
    header = PlanHeader(
        config={"model": model_cfg, **(extra_config or {})},
        model=ModelInfo(
            name=str(model_cfg.get("name") or "tiny"),
            backend=str(model_cfg.get("backend", "vllm")),
            tokenizer="tiny",
            tokenizer_hash=tokenizer_hash(ensure_tiny_model()),
        ),
        tasks=summaries,
    )
    return write_plan(path, header, records)


def compiled(out: str | os.PathLike[str], *overrides: str) -> Path:
    """A plan from the real compiler (``lmeval compile``'s API) on the local data."""
    from lmeval.compiler import compile_to_file

    return Path(compile_to_file([*overrides, f"run.data_dir={data_dir()}"], out=str(out)))


def extend(plan_path: str | os.PathLike[str], out: str | os.PathLike[str], tasks: Sequence[Task]) -> PlanHeader:
    """A copy of a (compiled) plan with more tasks appended, resealed."""
    from dataclasses import replace

    from lmeval.plans.plan import read_plan

    plan = read_plan(plan_path)
    records: list[DocRecord | InstanceRecord] = []
    by_task: dict[str, list[DocRecord | InstanceRecord]] = {}
    inst_by_doc: dict[tuple[str, int], list[InstanceRecord]] = {}
    for i in plan.instances:
        inst_by_doc.setdefault((i.task, i.doc_id), []).append(i)
    for d in plan.docs:
        by_task.setdefault(d.task, []).extend([d, *inst_by_doc.get((d.task, d.doc_id), [])])
    for t in plan.header.tasks:
        records.extend(by_task.get(t.name, []))
    summaries = list(plan.header.tasks)
    for name, output_type, docs in tasks:
        summaries.append(
            TaskSummary(
                name,
                output_type,
                len(docs),
                sum(len(i) for _, i in docs),
                0,
                "",
                "",
                1,
                [{"metric": "acc"}],
                [],
                [],
                {"task": name},
            )
        )
        for d, insts in docs:
            records.append(d)
            records.extend(insts)
    return write_plan(out, replace(plan.header, tasks=summaries), records)


def all_instances(tasks: Iterable[Task]) -> list[InstanceRecord]:
    return [i for _, _, docs in tasks for _, insts in docs for i in insts]
