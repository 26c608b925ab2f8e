"""The plan as a provider batch job: ``export_batch`` writes OpenAI's batch input JSONL, ``import_batch`` turns
the provider's output file into a results directory that scores like an executed one.

One line per distinct request (Instances with the same request hash are asked once, as ``execute`` does);
its ``custom_id`` is ``INSTANCE-PLAN-REQUEST``: the Instance id of the request's first Instance, then the first
16 hex digits of the plan hash and of that Instance's request hash (``custom_id_of``), and the import answers
every Instance of that request. The body is the one the HTTP backends send (``openai_chat.chat_body`` for
``/v1/chat/completions``, ``openai_api.completion_body`` for ``/v1/completions``), built by the executor's own
job code from the plan and the model settings, so the import cuts answers at the same stop strings.

Import checks: the output file is read with ``plans.read_lines`` (a regular file, each line at most
``MAX_ROW_BYTES``: ``/dev/zero``, a FIFO or a 300 MB line is refused, not read whole) and each line under
``plans.loads_json``'s limits. A line that is not JSON, a ``custom_id`` that is not one of this export's ids (a
foreign id), one exported from another plan (its plan hash differs: another plan's batch, e.g. the 2-shot
plan's answers offered to the 0-shot plan, whose Instance ids are the same), one whose request hash is not
that request's, or one seen twice is refused in one line and nothing is written; so is an answer that does not
say which endpoint it is from (``_endpoint_of``: its ``object``, else the shape of its choices). A request with
no answer (absent, or the provider's error) is left out: the import is partial, its manifest unfinished (exit
status 2), and importing another output file into the same directory (the re-run of the missing requests;
``export-batch --resume DIR`` exports only those) completes it. Rows already in the directory are kept, and
answers to them skipped.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lmeval.common import json_text, quoted, write_atomic
from lmeval.executor.backends import (
    chat_body,
    chat_output,
    chat_refusal,
    completion_body,
    completion_output,
    load_hf_tokenizer,
)
from lmeval.executor.errors import ExecuteError
from lmeval.executor.hardware import versions
from lmeval.executor.instances import load_instances
from lmeval.executor.jobloop import group, instance_where, result_row
from lmeval.executor.modelconf import ModelSpec, model_identity
from lmeval.executor.requests import GenJob, GenOutput, Tokenizer, gen_job, gen_result, token_rule
from lmeval.executor.resume import check_resume
from lmeval.executor.runmodel import resolve_run_model
from lmeval.executor.store import ResultsDir
from lmeval.plans import InstanceRecord, PlanError, PlanHeader, RunManifest, loads_json, plan_keys, read_lines

ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}  # under /v1, as the backends post
RESPONSE_OBJECTS = {"text_completion": "completions", "chat.completion": "chat"}  # an answer's ``object``
ID_HASH = 16  # hex digits of the plan hash and of the request hash in a custom_id


def custom_id_of(plan_hash: str, first: InstanceRecord) -> str:
    """A batch line's ``custom_id``: ``INSTANCE-PLAN-REQUEST`` (the Instance id, then the first ``ID_HASH`` hex
    digits of the plan hash and of the Instance's request hash), so an answer names the plan and the prompt
    it answers, not only the task, doc and index another plan shares."""
    return f"{first.instance_id}-{plan_hash[:ID_HASH]}-{first.request_hash[:ID_HASH]}"


@dataclass
class BatchRequest:
    custom_id: str  # custom_id_of(plan hash, the request's first Instance)
    job: GenJob
    members: list[InstanceRecord]  # every Instance this request answers


@dataclass
class BatchPlan:
    plan_path: str
    header: PlanHeader
    instances: list[InstanceRecord]
    spec: ModelSpec
    ident: dict[str, Any]
    tokenizer: Tokenizer | None
    model: str  # the model name the bodies carry
    endpoint: str  # chat | completions
    requests: dict[str, BatchRequest]


def batch_plan(plan_path: str, overrides: Sequence[str], endpoint: str, provider: str = "openai") -> BatchPlan:
    """The plan's requests as batch lines would carry them, after the checks ``execute`` makes."""
    if endpoint not in ENDPOINTS:
        raise ExecuteError(f"--endpoint {endpoint}: expected one of {', '.join(ENDPOINTS)}")
    header, instances = load_instances(plan_path, None)
    rm = resolve_run_model(plan_path, header, overrides, instances, remote=True)  # a model known by name is fine
    spec, ref, model_dir = rm.spec, rm.ref, rm.model_dir
    refusal = chat_refusal(header, instances, plan_path) if endpoint == "chat" else None
    for inst in instances:
        if refusal is None and inst.request_type != "generate_until":
            refusal = (
                f"{plan_path}: task {inst.task}: {inst.request_type} requests are not exported to a batch (yet); "
                "run this task with lmeval execute"
            )
        if refusal is None and inst.media:
            refusal = (
                f"{plan_path}: Instance {inst.instance_id} (task {inst.task} doc {inst.doc_id}) shows images, which "
                "are not exported to a batch (yet); run this task with lmeval execute"
            )
    if refusal:
        raise ExecuteError(refusal)
    tok = load_hf_tokenizer(model_dir) if model_dir is not None else None
    rule = token_rule(spec.token_rule, spec.add_bos_token, spec.prefix_token_id, tok)
    max_length = int(spec.max_model_len or 1 << 20)
    requests: dict[str, BatchRequest] = {}
    for members in group(instances, spec.seed).values():
        first = members[0]
        job = gen_job(first, tok, rule, max_length, spec.max_gen_toks, instance_where(plan_path, first), spec.reasoning)
        cid = custom_id_of(header.plan_hash, first)
        requests[cid] = BatchRequest(cid, job, members)
    ident = model_identity(replace(spec, backend=f"batch:{provider}"), model_dir, rm.tok_hash, ref)
    model = str(spec.engine.get("model") or spec.name)
    return BatchPlan(plan_path, header, instances, spec, ident, tok, model, endpoint, requests)


def request_line(bp: BatchPlan, req: BatchRequest) -> dict[str, Any]:
    x = req.job.input
    max_stop = bp.spec.engine.get("max_stop")
    if bp.endpoint == "chat":
        body = chat_body(bp.model, x, int(max_stop) if max_stop is not None else None)
    else:
        body = completion_body(bp.model, x)
    return {"custom_id": req.custom_id, "method": "POST", "url": "/v1" + ENDPOINTS[bp.endpoint], "body": body}


def export_batch(
    plan_path: str, out: str, overrides: Sequence[str] = (), endpoint: str = "chat", resume: str | None = None
) -> int:
    """Write the batch input file ``out``; the number of lines. ``resume``: a results directory of this plan
    (an earlier, partial import): only the requests it has no rows for are exported."""
    bp = batch_plan(plan_path, overrides, endpoint)
    done: set[str] = set()
    if resume is not None:
        store = ResultsDir(resume)
        if store.existing_manifest() is None:
            raise ExecuteError(f"--resume {resume}: not a results directory (no manifest.json)")
        done = store.done_ids(plan_keys(bp.instances), plan_path)
    lines = [
        json_text(request_line(bp, r), sort_keys=True)
        for r in bp.requests.values()
        if not all(m.instance_id in done for m in r.members)
    ]
    data = "".join(line + "\n" for line in lines).encode()
    write_atomic(out, lambda f: f.write(data))
    return len(lines)


@dataclass
class Answer:
    custom_id: str
    output: GenOutput | None  # None: the provider's error for this request
    error: str = ""


def read_output(path: str, bp: BatchPlan) -> list[Answer]:
    """The provider's output file, checked against the export (one-line ``ExecuteError`` naming the line)."""
    answers: list[Answer] = []
    seen: dict[str, int] = {}
    try:
        for n, line in read_lines(path, what="batch output"):
            if not line.strip():
                continue
            at = f"{path} line {n}"
            try:
                rec = loads_json(line)
            except ValueError as e:
                raise ExecuteError(f"{at}: not JSON (a truncated or corrupted output file): {e}") from None
            cid = rec.get("custom_id") if isinstance(rec, dict) else None
            if not isinstance(cid, str):
                raise ExecuteError(f"{at}: no custom_id")
            if cid not in bp.requests:
                raise ExecuteError(f"{at}: {_foreign(bp, cid)}")
            if cid in seen:
                raise ExecuteError(f"{at}: custom_id {cid} appears twice (first on line {seen[cid]})")
            seen[cid] = n
            answers.append(_answer(rec, bp.requests[cid], at))
    except OSError as e:
        raise ExecuteError(f"{path}: cannot read the batch output ({e.strerror or e})") from None
    return answers


def _foreign(bp: BatchPlan, cid: str) -> str:
    """Why ``cid`` (not one of this export's ids) is refused: another plan's, another prompt's, or unknown."""
    parts = cid.split("-")
    if len(parts) == 3 and all(parts):
        iid, plan, request = parts
        for req in bp.requests.values():
            first = req.members[0]
            if first.instance_id != iid:
                continue
            if plan != bp.header.plan_hash[:ID_HASH]:
                return (
                    f"custom_id {quoted(cid)} was exported from another plan (plan hash {quoted(plan, 24)}, "
                    f"not {bp.plan_path}'s {bp.header.plan_hash[:ID_HASH]}): another plan's batch is refused"
                )
            return (
                f"custom_id {quoted(cid)}: request hash {quoted(request, 24)} is not the plan's "
                f"{first.request_hash[:ID_HASH]} (task {first.task} doc {first.doc_id}): an answer to another prompt"
            )
    return f"custom_id {quoted(cid)} is not a request of {bp.plan_path} (a foreign id)"


def _answer(rec: dict[str, Any], req: BatchRequest, at: str) -> Answer:
    resp = rec.get("response")
    status = resp.get("status_code") if isinstance(resp, dict) else None
    if rec.get("error") or status != 200:
        return Answer(req.custom_id, None, json.dumps(rec.get("error") or {"status_code": status})[:200])
    body = resp.get("body") if isinstance(resp, dict) else None
    n = req.job.input.params.n if not req.job.input.params.greedy else 1
    try:
        if _endpoint_of(body, f"{at}: custom_id {req.custom_id}") == "completions":
            return Answer(req.custom_id, completion_output(body, n, at))
        return Answer(req.custom_id, chat_output(body, n, at))
    except (ValueError, KeyError, TypeError) as e:
        raise ExecuteError(f"{at}: custom_id {req.custom_id}: not a completion ({str(e)[:200]})") from None


def _endpoint_of(body: Any, where: str) -> str:
    """Which endpoint's answer ``body`` is. OpenAI's batch output always names it: the body is the endpoint's
    response object, ``object`` ``text_completion`` or ``chat.completion``. A compatible server's body without
    ``object`` is read by its choices when they agree: each holds ``text`` and no ``message`` (a completion) or
    ``message`` and no ``text`` (a chat completion). A choice without the field its kind answers in, and a body
    that names neither kind, are refused in one line (read as chat they were empty answers)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not all(isinstance(c, dict) for c in choices):
        return "chat"  # no choices to read: chat_output refuses the body in its own words
    shapes = {("text" in c, "message" in c) for c in choices}
    by_shape = {(True, False): "completions", (False, True): "chat"}.get(shapes.pop()) if len(shapes) == 1 else None
    obj = body.get("object")
    if obj is None:
        if by_shape is None:
            raise ExecuteError(
                f"{where}: the answer names no object and its choices hold neither only text (a completion) nor "
                "only message (a chat completion): which endpoint answered is unknown"
            )
        return by_shape
    kind = RESPONSE_OBJECTS.get(obj) if isinstance(obj, str) else None
    if kind is None:
        want = " or ".join(RESPONSE_OBJECTS)
        raise ExecuteError(f"{where}: the answer is object {quoted(obj, 40)}, not {want}")
    field = "text" if kind == "completions" else "message"
    if not all(field in c for c in choices):
        raise ExecuteError(f"{where}: the answer is a {obj} whose choices do not all hold {field}")
    return kind


def import_batch(
    plan_path: str, output: str, out: str, overrides: Sequence[str] = (), endpoint: str = "chat",
    provider: str = "openai",
) -> Path:  # fmt: skip
    """Write the answers of ``output`` into the results directory ``out`` (see the module docstring)."""
    plan_path = str(plan_path)
    bp = batch_plan(plan_path, overrides, endpoint, provider)
    answers = read_output(output, bp)
    store = ResultsDir(out)
    store.lock()
    try:
        existing = store.existing_manifest()
        if existing is not None:
            check_resume(existing, bp.header, None, bp.ident, store.path)
            if existing.backend != f"batch:{provider}":
                raise ExecuteError(f"{out}: holds results of backend {existing.backend}, not batch:{provider}")
        try:
            done = store.done_ids(plan_keys(bp.instances), plan_path) if existing is not None else set()
        except PlanError as e:
            raise ExecuteError(f"{e}; cannot import into {out}") from None
        rows: list[dict[str, Any]] = []
        failed = [a for a in answers if a.output is None]
        for a in answers:
            if a.output is None:
                continue
            req = bp.requests[a.custom_id]
            res = gen_result(req.job, a.output, bp.tokenizer)
            rows.extend(result_row(m, res) for m in req.members if m.instance_id not in done)
        have = done | {r["instance_id"] for r in rows}
        missing = [i for i in bp.instances if i.instance_id not in have]
        store.open()
        manifest = _manifest(bp, existing, output, len(rows), missing)
        store.write_manifest(manifest)
        if rows:
            store.write_part(rows)
        if not missing:
            manifest.finished = _now()
        store.write_manifest(manifest)
    finally:
        store.close()
    note = f", {len(failed)} answered with an error" if failed else ""
    if missing:
        note += (
            f"; {len(missing)} instances still missing (first: task {missing[0].task} doc {missing[0].doc_id}); "
            f"export them with export-batch --resume {out} and import that output into {out}"
        )
    print(f"imported {len(rows)} instances from {output}{note} -> {out}", file=sys.stderr)
    return Path(out)


def _manifest(
    bp: BatchPlan, existing: RunManifest | None, output: str, imported: int, missing: list[InstanceRecord]
) -> RunManifest:
    stats = dict(existing.stats) if existing is not None else {}
    stats["imported"] = int(stats.get("imported", 0)) + imported
    stats["missing"] = len(missing)
    outputs = list(existing.engine_args.get("outputs", [])) if existing is not None else []
    return RunManifest(
        plan_hash=bp.header.plan_hash,
        plan_path=str(Path(bp.plan_path).resolve()),
        model=bp.ident,
        backend=str(bp.ident["backend"]),
        engine_args={
            "endpoint": "/v1" + ENDPOINTS[bp.endpoint],
            "model": bp.model,
            "outputs": [*outputs, os.path.basename(output)],
        },
        versions=versions(None),
        n_instances=len(bp.instances),
        started=existing.started if existing is not None and existing.started else _now(),
        finished=None,
        stats=stats,
    )


def _now() -> str:
    from lmeval.executor.run import now

    return now()
