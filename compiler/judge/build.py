"""Compile a judge plan: the judged run's answers (samples.parquet, the first filter of each task) and documents
(its plan) rendered through the rubric, chat-templated and tokenized for the judge model, sealed as a plan whose
config holds the ``judge`` section and the judged run's identity (JUDGE.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.compiler import load_model_info
from lmeval.compiler.errors import CompileError
from lmeval.compiler.judge.config import JudgeConfig
from lmeval.plans import (
    TASK_PREFIX,
    DocRecord,
    InstanceRecord,
    PlanHeader,
    TaskSummary,
    content_hash,
    instance_id_for,
    plan_of,
    read_manifest,
    read_plan,
    read_scored,
    seal,
    split_locations,
)

CUT = "\n[... answer cut by the judge's max_answer_chars ...]"


@dataclass(frozen=True)
class Judged:
    """One scored run as the judge sees it: per task, doc id -> (document record, prompt, answer)."""

    results_dir: str
    plan_hash: str
    answers: dict[str, dict[int, tuple[DocRecord, str, str]]]

    def results_hash(self) -> str:
        """sha256 over every judged (task, doc id, answer), in order: the judged results' identity."""
        return content_hash([[t, i, a] for t, docs in self.answers.items() for i, (_, _, a) in docs.items()])


@dataclass(frozen=True)
class JudgeCompiled:
    header: PlanHeader
    blobs: list[bytes]
    records: list[DocRecord | InstanceRecord]

    def write(self, out: str | None) -> Path:
        from lmeval.plans import write_sealed

        path = Path(out) if out else Path("lmeval-plans") / f"judge-{self.header.plan_hash[:12]}.msgpack"
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_sealed(path, self.header, self.blobs)


def read_judged(results_dir: str, plan: str | None, tasks: list[str] | None, limit: int | None) -> Judged:
    """The scored run's answers to its generate_until tasks (``tasks``: only these; ``limit``: first N docs)."""
    scored = read_scored(results_dir)
    plan_path = plan_of(results_dir, read_manifest(results_dir), plan)
    p = read_plan(plan_path)
    if p.header.plan_hash != scored.results.plan_hash:
        raise CompileError(f"{plan_path}: plan {p.header.plan_hash[:12]} is not the plan {results_dir} was scored "
                           f"from ({scored.results.plan_hash[:12]}); pass --plan")  # fmt: skip
    gen = [t.name for t in p.header.tasks if t.output_type == "generate_until"]
    wanted = tasks if tasks is not None else gen
    for t in wanted:
        if t not in gen:
            raise CompileError(f"{results_dir}: judge.tasks: {t!r} is not a generate_until task of the run "
                               f"(it has: {', '.join(gen) or 'none'})")  # fmt: skip
    docs = {(d.task, d.doc_id): d for d in p.docs if d.task in wanted}
    prompts = {(i.task, i.doc_id): i.context for i in p.instances if i.idx == 0 and i.task in wanted}
    answers: dict[str, dict[int, tuple[DocRecord, str, str]]] = {t: {} for t in wanted}
    first_filter: dict[str, str] = {}
    for row in scored.samples.select("task", "doc_id", "filter", "filtered").iter_rows():
        task, doc_id, filt, text = row
        if task not in answers or first_filter.setdefault(task, filt) != filt or (task, doc_id) not in docs:
            continue
        if limit is not None and len(answers[task]) >= limit:
            continue
        answers[task][int(doc_id)] = (docs[(task, doc_id)], prompts.get((task, doc_id), ""), text or "")
    return Judged(results_dir, scored.results.plan_hash, answers)


def _env() -> Any:
    """The judge's templates render in the task templates' sandbox with the task templates' bounds (operators,
    calls, output size, time: ``compiler.build.render_bounded``), immutable as jinja2's immutable sandbox."""
    import jinja2

    from lmeval.compiler.build import ImmutableBoundedEnvironment

    env = ImmutableBoundedEnvironment(
        loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    env.bound_filters()
    return env


class _Clock:
    """All of one judge plan's renderings, bounded together as a task's are (``TASK_RENDER_SECONDS``)."""

    def __init__(self) -> None:
        self.seconds = 0.0


def _render(env: Any, text: str, values: dict[str, Any], where: str, clock: _Clock | None = None) -> str:
    import time

    import jinja2.sandbox

    from lmeval.compiler.build import TASK_RENDER_SECONDS, Bounded, render_bounded

    start = time.monotonic()
    try:
        return render_bounded(env.from_string(text), values)
    except Bounded as e:
        raise CompileError(f"{where}: template exceeds a bound: {e}") from None
    except jinja2.sandbox.SecurityError as e:
        raise CompileError(f"{where}: template refused by the sandbox: {_line(e)}") from None
    except jinja2.TemplateError as e:
        raise CompileError(f"{where}: {type(e).__name__}: {_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - anything a template raises (range too big, 5000-digit literal, ...)
        raise CompileError(f"{where}: template failed: {type(e).__name__}: {_line(e)}") from None
    finally:
        if clock is not None:
            clock.seconds += time.monotonic() - start
            if clock.seconds > TASK_RENDER_SECONDS:
                raise CompileError(f"{where}: the judge's templates took more than {TASK_RENDER_SECONDS:g} s")


def _line(e: BaseException) -> str:
    text = str(e).strip()
    if isinstance(e, ValueError) and text.startswith("Exceeds the limit"):
        return "an integer of more than 4300 digits"
    return text.splitlines()[0][:300] if text else ""


def _cut(text: str, n: int | None) -> str:
    return text if n is None or len(text) <= n else text[:n] + CUT


def compile_judge(cfg: JudgeConfig, judged: Judged, against: Judged | None = None) -> JudgeCompiled:
    """The sealed judge plan. Pairwise: ``against`` gives answer B for each document both runs answered."""
    if cfg.mode == "pairwise" and against is None:
        raise CompileError(f"judge {cfg.name}: pairwise mode needs --against OTHER_RESULTS (answer B)")
    tok, info, chat = load_model_info(cfg.model, cfg.apply_chat_template and True)
    env = _env()
    clock = _Clock()
    gen = {"until": [], **cfg.generation}
    records: list[DocRecord | InstanceRecord] = []
    summaries: list[TaskSummary] = []
    for task, docs in judged.answers.items():
        name = TASK_PREFIX + task
        task_records: list[DocRecord | InstanceRecord] = []
        for doc_id, (rec, prompt, answer) in docs.items():
            values = {"doc": rec.doc, "target": rec.target, "prompt": prompt}
            where = f"judge {cfg.name}, task {task}, doc {doc_id}"
            question = _render(env, cfg.question, values, f"{where}: judge.question", clock) if cfg.question else prompt
            reference = (
                _render(env, cfg.reference, values, f"{where}: judge.reference", clock) if cfg.reference else None
            )
            doc: dict[str, Any] = {"question": question, "reference": reference}
            orders: list[dict[str, Any]]
            if cfg.mode == "single":
                doc["answer"] = answer
                orders = [{"answer": _cut(answer, cfg.max_answer_chars)}]
            else:
                other = against.answers.get(task, {}).get(doc_id) if against else None
                if other is None:
                    continue  # only documents both runs answered are compared
                doc["answer_a"], doc["answer_b"] = answer, other[2]
                a, b = _cut(answer, cfg.max_answer_chars), _cut(other[2], cfg.max_answer_chars)
                orders = [{"answer_a": a, "answer_b": b}, {"answer_a": b, "answer_b": a}]
            task_records.append(DocRecord(task=name, doc_id=doc_id, doc=doc, target=reference or ""))
            for idx, answers in enumerate(orders):
                text = _render(env, cfg.rubric, {"question": question, "reference": reference, **answers},
                               f"{where}: judge.rubric", clock)  # fmt: skip
                context = text
                if chat is not None:
                    system = cfg.system_with_reference if reference and cfg.system_with_reference else cfg.system
                    msgs = ([{"role": "system", "content": system}] if system else []) + [
                        {"role": "user", "content": text}]  # fmt: skip
                    context = chat(msgs, True)
                ids = tok.encode_many([context])[0] if tok is not None else None
                task_records.append(InstanceRecord(
                    instance_id=instance_id_for(name, doc_id, idx), task=name, doc_id=doc_id, idx=idx,
                    request_type="generate_until", context=context, generation_kwargs=gen,
                    context_ids=None if ids is None else [int(i) for i in ids],
                ))  # fmt: skip
        n_docs = sum(isinstance(r, DocRecord) for r in task_records)
        tcfg = {"task": name, "output_type": "generate_until", "num_fewshot": 0, "metric_list": [], "filter_list": [],
                "generation_kwargs": gen, "judged_task": task}  # fmt: skip
        summaries.append(TaskSummary.of_config(
            tcfg, n_docs=n_docs, n_instances=len(task_records) - n_docs,
            data_fingerprint=content_hash([r.doc for r in task_records if isinstance(r, DocRecord)]),
        ))  # fmt: skip
        records.extend(task_records)
    if not summaries or not records:
        raise CompileError(f"{judged.results_dir}: nothing to judge (no answered generate_until documents)")
    section = cfg.section()
    section["judged"] = {"plan_hash": judged.plan_hash, "results_hash": judged.results_hash()}
    if against is not None:
        section["against"] = {"plan_hash": against.plan_hash, "results_hash": against.results_hash()}
    portable, _ = split_locations({"judge": section, "model": cfg.model})
    header = PlanHeader(config=portable, model=info, tasks=summaries, lmeval_version=_version())
    sealed, blobs = seal(header, records)
    return JudgeCompiled(sealed, blobs, records)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lmeval")
    except PackageNotFoundError:
        return "0"
