"""Stage k+1 of a chained plan from stage k's plan and results (plans/plan/chain.py; FORMAT.md, *Chained plans*).

Each document of a multi-turn task (task config ``turns_field``) whose turns go past k becomes a document of
stage k+1: its Instance's messages are stage k's messages, the model's answer (the results' ``response``,
verbatim) as an assistant message and the document's next user turn, rendered with the chat template the plan
names and tokenized as the compile does. The plan's config gains the chain section (turn, parent plan hash,
parent results hash), so its hash holds both."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.compiler.encode import load_model_info
from lmeval.compiler.errors import CompileError
from lmeval.plans import (
    ANSWERS_KEY,
    CHAIN_KEY,
    ChainLink,
    DocRecord,
    InstanceRecord,
    PlanError,
    PlanHeader,
    TaskSummary,
    chain_answered,
    instance_id_for,
    next_messages,
    plan_turn,
    read_manifest,
    read_plan,
    read_results,
    results_hash,
    seal,
    turns_field,
    turns_problem,
)


@dataclass(frozen=True)
class StageCompiled:
    """A sealed stage k+1 plan: header, each record's bytes, the records."""

    header: PlanHeader
    blobs: list[bytes]
    records: list[DocRecord | InstanceRecord]

    @property
    def turn(self) -> int:
        return plan_turn(self.header.config)

    def write(self, path: str | Path) -> Path:
        from lmeval.plans import write_sealed

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        return write_sealed(p, self.header, self.blobs)


def _answers(results_dir: str, plan_hash: str, wanted: list[InstanceRecord]) -> dict[str, str]:
    """instance id -> response of every wanted Instance, each row checked against the plan's Instance."""
    try:
        manifest = read_manifest(results_dir)
        if manifest.plan_hash != plan_hash:
            raise CompileError(f"{results_dir}: results of plan {manifest.plan_hash[:12]}, not of the stage's plan "
                               f"{plan_hash[:12]}")  # fmt: skip
        rows = read_results(results_dir).select("instance_id", "request_hash", "response").rows()
    except PlanError as e:
        raise CompileError(str(e)) from None
    got = {i: (h, r) for i, h, r in rows}
    out: dict[str, str] = {}
    missing: list[InstanceRecord] = []
    for inst in wanted:
        row = got.get(inst.instance_id)
        if row is None or row[1] is None:
            missing.append(inst)
            continue
        if row[0] != inst.request_hash:
            raise CompileError(f"{results_dir}: the row of {inst.task} doc {inst.doc_id} answers another request "
                               f"than the plan's")  # fmt: skip
        out[inst.instance_id] = row[1]
    if missing:
        m = missing[0]
        raise CompileError(f"{results_dir}: {len(missing)} of {len(wanted)} answers missing (first: {m.task} doc "
                           f"{m.doc_id}); finish the stage first (`lmeval execute` resumes it)")  # fmt: skip
    return out


def _model(header: PlanHeader, located: dict[str, Any] | None) -> tuple[Any, Any]:
    """The plan's tokenizer and chat template function, checked against the plan's model identity; ``located``:
    the compile's locations (``model.path``, ``model.gguf_file``, ``model.package``: plans/plan/identity.py)."""
    model_cfg = dict(header.config.get("model") or {})
    for key, value in (located or {}).items():
        if key.startswith("model.") and value is not None:
            model_cfg[key.removeprefix("model.")] = value
    run = header.config.get("run") or {}
    tok, info, chat = load_model_info(model_cfg, True, run.get("chat_template_kwargs"))
    for key in ("tokenizer_hash", "chat_template_hash"):
        if getattr(info, key) != getattr(header.model, key):
            raise CompileError(
                f"model.{key}: the model found ({info.name}) is not the one the chain's plan was "
                "compiled for; say where it is (model.path, model.gguf_file, model.package)"
            )
    return tok, chat


def compile_next(
    plan_path: str, results_dir: str, located: dict[str, Any] | None = None
) -> tuple[str, StageCompiled | None]:
    """Stage k's results hash and stage k+1 from stage k's plan (``plan_path``) and complete results
    (``results_dir``); None for the plan when no conversation has another turn. ``located``: where the plan's
    model lives (the compile's locations, ``Compiled.locations``: ``model.path`` and the like; not identity)."""
    try:
        plan = read_plan(plan_path)
    except PlanError as e:
        raise CompileError(str(e)) from None
    header = plan.header
    fields = {t.name: f for t in header.tasks if (f := turns_field(t.config)) is not None}
    if not fields:
        raise CompileError(f"{plan_path}: no multi-turn task (a task config with turns_field) in the plan")
    turn = plan_turn(header.config)
    firsts = chain_answered(header.tasks, plan.instances)
    answers = _answers(results_dir, header.plan_hash, firsts)
    link = ChainLink(turn + 1, header.plan_hash,
                     results_hash((i.task, i.doc_id, i.idx, answers[i.instance_id]) for i in firsts))  # fmt: skip
    by_doc = {(i.task, i.doc_id): i for i in firsts}
    todo: list[tuple[DocRecord, InstanceRecord, list[str]]] = []
    for d in plan.docs:
        if d.task not in fields:
            continue
        turns = d.doc.get(fields[d.task])
        problem = turns_problem(turns)
        if problem is not None:
            raise CompileError(f"{plan_path}: task {d.task}, doc {d.doc_id}: field {fields[d.task]!r} (turns_field) "
                               f"{problem}")  # fmt: skip
        assert isinstance(turns, list)
        if len(turns) > turn:
            todo.append((d, by_doc[(d.task, d.doc_id)], turns))
    if not todo:
        return link.parent_results_hash, None
    tok, chat = _model(header, located)
    records: list[DocRecord | InstanceRecord] = []
    counts: dict[str, list[int]] = {}
    for d, inst, turns in todo:
        if inst.messages is None:
            raise CompileError(f"{plan_path}: task {d.task}, doc {d.doc_id}: the Instance keeps no chat messages "
                               f"(compile with run.apply_chat_template=true)")  # fmt: skip
        answer = answers[inst.instance_id]
        msgs = next_messages(inst.messages, answer, turns[turn])
        context = chat(msgs, True)
        ids = tok.encode_many([context])[0]
        doc = {**d.doc, ANSWERS_KEY: [*d.doc.get(ANSWERS_KEY, []), answer]}
        records.append(DocRecord(task=d.task, doc_id=d.doc_id, doc=doc, target=d.target, choices=d.choices,
                                 fewshot_ids=list(d.fewshot_ids)))  # fmt: skip
        records.append(InstanceRecord(
            instance_id=instance_id_for(d.task, d.doc_id, 0), task=d.task, doc_id=d.doc_id, idx=0,
            request_type="generate_until", context=context, generation_kwargs=inst.generation_kwargs,
            context_ids=[int(i) for i in ids], messages=msgs,
        ))  # fmt: skip
        c = counts.setdefault(d.task, [0, 0])
        c[0], c[1] = c[0] + 1, c[1] + 1
    summaries = [TaskSummary.of_config(t.config, n_docs=counts[t.name][0], n_instances=counts[t.name][1],
                                       data_fingerprint=t.data_fingerprint, version=t.version)
                 for t in header.tasks if t.name in counts]  # fmt: skip
    extra = {k: v for k, v in header.extra.items() if k in ("selected", "aliases")}
    new = PlanHeader(config={**header.config, CHAIN_KEY: link.section()}, model=header.model, tasks=summaries,
                     lmeval_version=header.lmeval_version, extra=extra)  # fmt: skip
    sealed, blobs = seal(new, records)
    return link.parent_results_hash, StageCompiled(sealed, blobs, records)
