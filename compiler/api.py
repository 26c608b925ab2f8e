"""``compile_plan``: Hydra overrides → sealed plan header + records. ``compile_to_file`` writes it."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import logging
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from lmeval.compiler.build import BuiltTask, RunOptions, TaskBuilder
from lmeval.compiler.catalog import QUALIFIER, catalog
from lmeval.compiler.config import CONF_DIR, RunConfig, compose, run_config
from lmeval.compiler.errors import CompileError, fail
from lmeval.compiler.functions import FunctionRef, as_data
from lmeval.compiler.scorecheck import check_groups, check_task
from lmeval.compiler.select import (
    Expander,
    Selection,
    chain_lookups,
    conf_lookup,
    hydra_found,
    include_index,
    index_lookup,
    unqualified,
)
from lmeval.compiler.taskconfig import DEFAULT_METRICS, TaskConfig
from lmeval.compiler.tokens import ModelTokenizer, sha256_text
from lmeval.plans.canonical import canonical_bytes
from lmeval.plans.identity import split_locations
from lmeval.plans.io import seal
from lmeval.plans.modelref import ModelRef, ModelRefError, model_name, resolve_model
from lmeval.plans.recordcodec import encode_doc, encode_instance
from lmeval.plans.records import (
    DocRecord,
    GroupSummary,
    InstanceRecord,
    ModelInfo,
    PlanHeader,
    TaskSummary,
    instance_id_for,
    request_hash_of,
)

log = logging.getLogger("lmeval.compile")

Record = DocRecord | InstanceRecord


def _lmeval_version() -> str:
    try:
        from importlib.metadata import version

        return version("lmeval")
    except Exception:  # noqa: BLE001
        return "0"


def select_tasks(cfg: dict[str, Any], run: RunConfig) -> Selection:
    task_dir = CONF_DIR / "task"
    conf = conf_lookup(task_dir)
    index = include_index(run.include_path) if run.include_path else None
    lookups = [unqualified(index_lookup(index), QUALIFIER)] if index is not None else []
    lookups.append(unqualified(conf, QUALIFIER))
    broken = dict(index.broken) if index is not None else {}
    cat = catalog() if _needs_catalog(cfg, run, index, conf) else None
    if cat is not None:
        lookups.append(index_lookup(cat.index, QUALIFIER))
    lookup = chain_lookups(*lookups)

    def known() -> list[str]:
        names = sorted(p.stem for p in task_dir.glob("*.yaml"))
        return (index.names() if index is not None else []) + names + (cat.index.names() if cat else [])

    ex = Expander(lookup, known, broken)
    bad_lines: list[str] = []
    ex.sel.bad_lines = bad_lines  # type: ignore[attr-defined]
    hydra_tasks = cfg.get("task") or {}
    if not isinstance(hydra_tasks, dict):
        raise fail("the 'task' config must map task names to task configs (use +task=NAME)")
    for key in sorted(hydra_tasks):
        body = hydra_tasks[key]
        if not isinstance(body, dict):
            raise fail(f"task.{key} must be a task config mapping, got {type(body).__name__}")
        src = task_dir / f"{key}.yaml"
        if body.get("kind") == "jsonl_spec":
            ex.sel.top += _jsonl_spec_task(ex, key, body, bad_lines)
            continue
        found = hydra_found(key, body, task_dir, str(src) if src.is_file() else f"task.{key}")
        if found.kind == "group":
            ex.sel.top.append(ex._group(str(found.cfg["group"]), found.cfg, found.source, None, [], False))
        else:
            ex.sel.top += ex._task(found.cfg, found.source, [], default_name=key)
    for name in run.tasks or []:
        ex.sel.top += ex.add_named(name, [], where="run.tasks")
    if not ex.sel.tasks:
        raise fail("no task selected: pass +task=NAME (e.g. +task=arith) or run.tasks=[...]")
    ex.sel.tasks.sort(key=lambda s: s.name)
    return ex.sel


def _needs_catalog(cfg: dict[str, Any], run: RunConfig, index: Any, conf: Any) -> bool:
    """Whether some selected name is neither in run.include_path nor conf/task (so the ~14,000-file catalog
    index is only read when it is needed). Group members are resolved later and may need it too: any
    name that is not a plain conf/task file name turns it on."""
    for name in run.tasks or []:
        if name.startswith(QUALIFIER):
            return True
        if index is not None and name in index.entries:
            continue
        if not (CONF_DIR / "task" / f"{name}.yaml").is_file():
            return True
    return False


def _jsonl_spec_task(ex: Expander, key: str, body: dict[str, Any], bad_lines: list[str]) -> list[str]:
    """A ``kind: jsonl_spec`` task node (compiler/spec): validated docs + a task config for the normal path."""
    from lmeval.compiler.spec import load_spec_task

    path = body.get("path")
    if not isinstance(path, str) or not path or path == "???":
        raise fail(f"set task.{key}.path=FILE (the JSONL task spec)", field=f"task.{key}.path")
    allow = body.get("allow_bad_tasks", False)
    if not isinstance(allow, bool):
        raise fail(f"must be true or false, got {allow!r}", field=f"task.{key}.allow_bad_tasks")
    st = load_spec_task(path, allow, name=key)
    # the plan keeps the file's name, not where it lives (plans/identity.py)
    bad_lines += [_portable_line(line, path) for line in st.bad_lines]
    names = ex._task(dict(st.task_config), path, [], default_name=key)
    spec = ex.sel.tasks[-1]
    split = spec.test_split if spec.test_split is not None else spec.validation_split
    assert split is not None
    spec.preloaded = {split: st.docs}
    spec.per_doc_generation_kwargs = True
    return names


def _portable_line(line: str, path: str) -> str:
    return Path(path).name + line[len(path) :] if line.startswith(path + ":") else line


def load_tokenizer(
    model_cfg: dict[str, Any] | None, need_chat: bool = False
) -> tuple[ModelTokenizer | None, ModelInfo]:
    if not model_cfg:
        return None, ModelInfo(name="none", backend="none")
    add_bos = model_cfg.get("add_bos_token")
    if add_bos is not None and not isinstance(add_bos, bool):
        raise fail(f"must be true, false or null, got {add_bos!r}", field="model.add_bos_token")
    prefix = model_cfg.get("prefix_token_id")
    if prefix is not None and (isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 0):
        raise fail(f"must be a token id (an integer >= 0) or null, got {prefix!r}", field="model.prefix_token_id")
    ref = resolve_model_for_compile(model_cfg)
    tok = ModelTokenizer(ref.dir, add_bos, ref.tokenizer_identity, need_chat=need_chat, prefix_token_id=prefix)
    engine = model_cfg.get("engine") or {}
    info = ModelInfo(
        name=model_name(model_cfg.get("name"), model_cfg.get("path")),
        path=ref.hub_id,  # never a machine path
        backend=str(model_cfg.get("backend", "vllm")),
        tokenizer=ref.tokenizer_identity,
        tokenizer_hash=tok.tokenizer_hash,
        add_bos_token=add_bos,  # type: ignore[arg-type]
        engine=dict(engine) if isinstance(engine, dict) else {},
        token_rule=tok.rule,
        revision=ref.revision,
        config_hash=ref.config_hash(),
    )
    return tok, info


def resolve_model_for_compile(model_cfg: dict[str, Any]) -> ModelRef:
    """``model.path`` (a directory, a Hub id through the Hugging Face cache, null for the tiny model) as a
    ``ModelRef``; a compile error naming the setting when it cannot be found."""
    try:
        return resolve_model(model_cfg.get("path"), model_cfg.get("revision"), need="tokenizer")
    except ModelRefError as e:
        raise CompileError(str(e)) from None


def _data(value: Any, spec: TaskConfig, field: str, with_path: bool) -> Any:
    if isinstance(value, FunctionRef):
        return as_data(value, with_path=with_path, task=spec.name, field=field)
    if isinstance(value, dict):
        return {str(k): _data(v, spec, field, with_path) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_data(v, spec, field, with_path) for v in value]
    return value


_SCORE_TIME = ("process_results", "metric_list", "filter_list")


def task_config_data(bt: BuiltTask, run: RunOptions) -> dict[str, Any]:
    s = bt.config
    cfg: dict[str, Any] = {}
    for k, v in s.raw.items():
        if v is None or k in ("fewshot_config", "generation_kwargs", "metric_list", "filter_list"):
            continue
        cfg[k] = _data(v, s, k, k in _SCORE_TIME)
    f = s.fewshot
    cfg.update(
        task=s.name,
        output_type=s.output_type,
        description=s.description,
        target_delimiter=s.target_delimiter,
        fewshot_delimiter=s.fewshot_delimiter,
        repeats=s.repeats,
        num_fewshot=bt.num_fewshot,
        fewshot_random_seed=run.fewshot_random_seed,
        metric_list=_data(metric_list(s), s, "metric_list", True),
        filter_list=_data(filter_list(s), s, "filter_list", True),
        multiple_input=bt.multiple_input,
        multiple_target=bt.multiple_target,
        fewshot_config=_data(
            {
                "sampler": f.sampler,
                "split": f.split,
                "samples": f.samples,
                "fewshot_indices": f.fewshot_indices,
                "doc_to_text": f.doc_to_text,
                "doc_to_target": f.doc_to_target,
                "doc_to_choice": f.doc_to_choice,
                "gen_prefix": f.gen_prefix,
                "fewshot_delimiter": f.fewshot_delimiter,
                "target_delimiter": f.target_delimiter,
                "process_docs": f.process_docs,
            },
            s,
            "fewshot_config",
            False,
        ),
    )
    if s.output_type == "generate_until":
        gk = dict(s.generation_kwargs or {})
        gk.update(run.gen_kwargs or {})
        cfg["generation_kwargs"] = gk
    return cfg


def metric_list(s: TaskConfig) -> list[dict[str, Any]]:
    if s.metric_list is not None:
        return [dict(m) for m in s.metric_list]
    return [{"metric": m} for m in DEFAULT_METRICS[s.output_type]]


def filter_list(s: TaskConfig) -> list[dict[str, Any]]:
    if s.filter_list is not None:
        return [dict(f) for f in s.filter_list]
    return [{"name": "none", "filter": [{"function": "take_first"}]}]


TokenIds = dict[tuple[int, int], tuple[list[int] | None, list[int] | None]]


_CHUNK_DOCS = 4096  # docs per tokenizing batch: the main thread encodes one batch while the next is tokenized


def _token_ids(bt: BuiltTask, tok: ModelTokenizer, lo: int, hi: int) -> TokenIds:
    """Context (and continuation) token ids of the requests of docs ``lo:hi``, by (doc index, request
    index), in one batch."""
    s = bt.config
    ll_keys: list[tuple[int, int]] = []
    ll_pairs: list[tuple[str, str]] = []
    ctx_keys: list[tuple[int, int]] = []
    ctx_texts: list[str] = []
    for di in range(lo, hi):
        for ri, rq in enumerate(bt.docs[di].requests):
            if rq.request_type == "loglikelihood":
                ll_keys.append((di, ri))
                ll_pairs.append((rq.context, rq.continuation or ""))
            else:
                ctx_keys.append((di, ri))
                ctx_texts.append(rq.context)
    ids: TokenIds = {}
    for key, (c, cont) in zip(ll_keys, tok.encode_pairs(ll_pairs), strict=True):
        if not cont:
            d = bt.docs[key[0]]
            rq = d.requests[key[1]]
            raise fail(
                f"request idx {rq.idx}: continuation {rq.continuation!r} encodes to zero tokens",
                file=s.source,
                task=s.name,
                field="doc_to_target" if s.output_type != "multiple_choice" else "doc_to_choice",
                doc_id=d.doc_id,
            )
        ids[key] = (c, cont)
    for key, c in zip(ctx_keys, tok.encode_many(ctx_texts), strict=True):
        ids[key] = (c, None)
    return ids


def _fingerprint(bt: BuiltTask) -> tuple[str, list[bytes]]:
    """The data fingerprint (``content_hash`` of the list of eval docs, computed incrementally) and the
    canonical bytes of the selected docs."""
    s = bt.config
    fp = hashlib.sha256()
    fp.update(_array_header(len(bt.eval_docs)))
    doc_bytes: list[bytes] = []
    for i, doc in enumerate(bt.eval_docs):
        try:
            b = canonical_bytes(doc)
        except TypeError as e:
            raise fail(f"document cannot be stored in a plan: {e}", file=s.source, task=s.name, doc_id=i) from None
        fp.update(b)
        if i < len(bt.docs):
            doc_bytes.append(b)
    return fp.hexdigest(), doc_bytes


def _doc_records(bt: BuiltTask, doc_bytes: list[bytes]) -> tuple[list[DocRecord], list[bytes]]:
    """The task's doc records and their stored bytes (``doc_bytes``: each doc's canonical bytes)."""
    s = bt.config
    recs: list[DocRecord] = []
    blobs: list[bytes] = []
    for di, d in enumerate(bt.docs):
        rec = DocRecord(
            task=s.name,
            doc_id=d.doc_id,
            doc=d.doc,
            target=d.target,
            choices=d.choices,
            fewshot_ids=d.fewshot_ids,
            doc_hash=hashlib.sha256(doc_bytes[di]).hexdigest(),
        )
        try:
            blobs.append(encode_doc(rec, doc_bytes[di]))
        except TypeError as e:
            raise fail(f"target or choices cannot be stored in a plan: {e}", file=s.source, task=s.name,
                       doc_id=d.doc_id) from None  # fmt: skip
        recs.append(rec)
    return recs, blobs


def _records(bt: BuiltTask, tok: ModelTokenizer | None) -> tuple[list[Record], list[bytes], str]:
    """The task's records in plan order, their stored bytes (for ``seal``) and the data fingerprint.

    Token ids are computed in a second thread, batch by batch, while this one encodes the documents and then
    each batch's instances: the tokenizer's Rust core releases the GIL, so the two overlap. Results and
    errors do not depend on the timing (batches are consumed in order)."""
    n = len(bt.docs)
    if tok is None:
        fingerprint, doc_bytes = _fingerprint(bt)
        docs, doc_blobs = _doc_records(bt, doc_bytes)
        return (*_instance_records(bt, docs, doc_blobs, {}, 0, n), fingerprint)
    out: list[Record] = []
    blobs: list[bytes] = []
    bounds = [(lo, min(lo + _CHUNK_DOCS, n)) for lo in range(0, n, _CHUNK_DOCS)]
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lmeval-tokenize") as pool:
        pending = [pool.submit(_token_ids, bt, tok, lo, hi) for lo, hi in bounds]
        try:
            fingerprint, doc_bytes = _fingerprint(bt)
            docs, doc_blobs = _doc_records(bt, doc_bytes)
            for (lo, hi), fut in zip(bounds, pending, strict=True):
                recs, rec_blobs = _instance_records(bt, docs, doc_blobs, fut.result(), lo, hi)
                out += recs
                blobs += rec_blobs
        finally:
            for fut in pending:
                fut.cancel()  # after an error: do not tokenize the rest
    return out, blobs, fingerprint


def _instance_records(
    bt: BuiltTask, docs: list[DocRecord], doc_blobs: list[bytes], ids: TokenIds, lo: int, hi: int
) -> tuple[list[Record], list[bytes]]:
    """Docs ``lo:hi`` in plan order (each doc record, then its instances) and their stored bytes."""
    s = bt.config
    out: list[Record] = []
    blobs: list[bytes] = []
    for di in range(lo, hi):
        d = bt.docs[di]
        out.append(docs[di])
        blobs.append(doc_blobs[di])
        prev: InstanceRecord | None = None
        for ri, rq in enumerate(d.requests):
            c_ids, cont_ids = ids.get((di, ri), (None, None))
            rec = InstanceRecord(
                instance_id=instance_id_for(s.name, d.doc_id, rq.idx),
                task=s.name,
                doc_id=d.doc_id,
                idx=rq.idx,
                request_type=rq.request_type,
                context=rq.context,
                continuation=rq.continuation,
                generation_kwargs=rq.generation_kwargs,
                repeats=s.repeats,
                context_ids=c_ids,
                continuation_ids=cont_ids,
                request_hash=request_hash_of(
                    rq.request_type, rq.context, rq.continuation, rq.generation_kwargs, c_ids, cont_ids
                ),  # fmt: skip
            )
            try:
                blobs.append(encode_instance(rec, prev))
            except TypeError as e:
                raise fail(f"request cannot be stored in a plan: {e}", file=s.source, task=s.name,
                           field="generation_kwargs", doc_id=d.doc_id) from None  # fmt: skip
            out.append(rec)
            prev = rec
    return out, blobs


def _array_header(n: int) -> bytes:
    p = msgpack.Packer()
    return p.pack_array_header(n)


@dataclass(frozen=True)
class Compiled:
    """A sealed plan (header, records and their bytes) and the locations the compile was given (output
    file, data dir, include path, model dir: ``plans.identity``), which are not part of the plan."""

    header: PlanHeader
    records: list[Record]
    blobs: list[bytes]
    locations: dict[str, Any]


def compile_plan(overrides: list[str]) -> tuple[PlanHeader, list[Record]]:
    """Compose the configs with Hydra and compile every selected task into a sealed header + records."""
    c = compile_located(overrides)
    return c.header, c.records


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector. A compile allocates millions of small acyclic objects (docs,
    records, token id lists) that reference counting frees; the collector's passes over them cost a third of
    a large compile's time and find nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def compile_sealed(overrides: list[str]) -> tuple[PlanHeader, list[Record], list[bytes]]:
    """``compile_plan`` plus the encoded record bytes (for writing without encoding twice)."""
    c = compile_located(overrides)
    return c.header, c.records, c.blobs


def compile_located(overrides: list[str]) -> Compiled:
    """``compile_sealed`` plus the locations split off the config (``plans.identity.split_locations``)."""
    with _gc_paused():
        return _compile(overrides)


def _compile(overrides: list[str]) -> Compiled:
    cfg = compose(overrides)
    portable, locations = split_locations(cfg)
    run = run_config(cfg.get("run") or {})
    tok, model = load_tokenizer(cfg.get("model"), need_chat=run.apply_chat_template)
    chat = None
    if run.apply_chat_template:
        if tok is None or tok.chat_template is None:
            raise fail("run.apply_chat_template=true but the model's tokenizer has no chat template",
                       field="run.apply_chat_template")  # fmt: skip
        chat = tok.chat
        model = dataclasses.replace(model, chat_template_hash=sha256_text(tok.chat_template))
    sel = select_tasks(cfg, run)
    for spec in sel.tasks:  # every task's scoring side, before any prompt is rendered
        check_task(spec)
    check_groups(sel.groups, sel.tasks)
    opts = run.options()
    records: list[Record] = []
    blobs: list[bytes] = []
    summaries: list[TaskSummary] = []
    notes: list[str] = []
    for spec in sel.tasks:
        bt = TaskBuilder(spec, opts, chat).build()
        notes += bt.notes
        recs, task_blobs, fingerprint = _records(bt, tok)
        records += recs
        blobs += task_blobs
        summaries.append(
            TaskSummary.of_config(  # name, output_type, num_fewshot, metric_list, filter_list from the config
                task_config_data(bt, opts),
                n_docs=len(bt.docs),
                n_instances=sum(len(d.requests) for d in bt.docs),
                data_fingerprint=fingerprint,
                version=spec.version,
                groups=spec.groups,
            )
        )
    groups = [
        GroupSummary(
            name=g.name, subtasks=g.subtasks, aggregate_metric_list=g.aggregate_metric_list, version=g.version
        )  # fmt: skip
        for g in sorted(sel.groups, key=lambda g: g.name)
    ]
    extra: dict[str, Any] = {"selected": sel.top}
    if getattr(sel, "bad_lines", None):
        extra["spec_bad_lines"] = sel.bad_lines  # type: ignore[attr-defined]
    aliases = {s.name: s.task_alias for s in sel.tasks if s.task_alias}
    aliases.update({g.name: g.alias for g in sel.groups if g.alias})
    if aliases:
        extra["aliases"] = aliases
    if notes:
        extra["notes"] = notes
    header = PlanHeader(
        config=portable,
        model=model,
        tasks=summaries,
        groups=groups,
        lmeval_version=_lmeval_version(),
        extra=extra,
    )
    try:
        sealed, blobs = seal(header, records, blobs)
    except TypeError as e:
        raise CompileError(f"the plan cannot be encoded canonically: {e}") from None
    return Compiled(sealed, records, blobs, locations)


def default_name(header: PlanHeader) -> str:
    names = list(header.extra.get("selected") or [t.name for t in header.tasks])
    if len(names) > 3:
        names = names[:3] + [f"{len(names) - 3}more"]
    name = "+".join(names) or "plan"
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", name)
    return name[:80]


def compile_to_file(overrides: list[str], out: str | None = None) -> Path:
    """Compile and write the plan to ``out``, ``run.out`` or ``plans/<name>-<hash12>.msgpack`` (cwd)."""
    from lmeval.plans.io import write_sealed

    c = compile_located(overrides)
    return write_sealed(plan_path(c.header, out or c.locations.get("run.out")), c.header, c.blobs)


def plan_path(header: PlanHeader, out: str | None = None) -> Path:
    """``out`` (the --out option or ``run.out``), else ``plans/<name>-<hash12>.msgpack`` (relative to the
    cwd)."""
    return Path(out) if out else Path("plans") / f"{default_name(header)}-{header.plan_hash[:12]}.msgpack"
