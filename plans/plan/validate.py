"""A verified plan is a valid plan: the format's invariants, checked on every read (``plans/plan/io.py`` and the
scorer's one-pass loader call this), so a plan whose hashes were recomputed after an edit is still refused
unless it is a plan the compiler could have written.

What is checked (FORMAT.md), before any stage uses a record:

- the header: the type and range of every field (counts non-negative ints, hashes 64 hex digits, names
  strings, ``output_type`` one of ``OUTPUT_TYPES``), at least one task, task names unique, group members
  strings, and the header's ``n_docs`` / ``n_instances`` the sums of its tasks';
- every record: its fields' types and ranges; a doc's ``doc_hash`` is sha256 of its canonical document; an
  Instance follows its own doc's record, its ``instance_id`` is ``instance_id_for(task, doc_id, idx)`` and
  its ``request_hash`` is ``request_hash_of`` its content (recomputed: a stored hash is never trusted),
  ``request_type`` is the one its task's ``output_type`` asks, ``repeats`` within 1..``MAX_REPEATS``,
  token ids ints within 0..``MAX_TOKEN_ID``, ``generation_kwargs`` a map whose known keys have their types
  and bounds; no doc or Instance twice;
- the stream: tasks in the order of their spans, each contiguous; per task as many docs and Instances as
  its summary says.

A failure is a ``PlanError``: one line naming the file, task, doc and field.
"""

from __future__ import annotations

import array
import hashlib
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from lmeval.plans.errors import PlanError
from lmeval.plans.limits import INT64_MAX, MAX_GEN_TOKS, MAX_REPEATS, MAX_TOKEN_ID
from lmeval.plans.plan.canonical import canonical_bytes, normalize
from lmeval.plans.plan.chatmessages import messages_problem
from lmeval.plans.plan.media import media_hashes, media_problem
from lmeval.plans.plan.records import OUTPUT_TYPES, PlanHeader, instance_id_for, request_hash_of
from lmeval.plans.plan.toolcalls import tools_problem

_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX16 = re.compile(r"[0-9a-f]{16}")
# the request type each output type asks for (lm-eval 0.4.13: a multiple_choice task asks loglikelihoods)
REQUEST_OF: dict[str, str] = {
    "loglikelihood": "loglikelihood",
    "multiple_choice": "loglikelihood",
    "loglikelihood_rolling": "loglikelihood_rolling",
    "generate_until": "generate_until",
}
_MAX_TOKEN_KEYS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")
_NUMBER_KEYS = ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")
_INT_KEYS = ("top_k", "seed")
MAX_STOP_STRINGS = 1024
_INT = frozenset({int})

# ``request_hash_of`` packs a six-key map in sorted key order; packed piecewise here, so the context's part is
# hashed once for the Instances sharing it (equal bytes: tests/plans/test_validate.py)
_MAP6 = b"\x86"


_K_CTX, _K_CTX_IDS, _K_CONT, _K_CONT_IDS, _K_KW, _K_RT = (
    msgpack.packb(k)
    for k in ("context", "context_ids", "continuation", "continuation_ids", "generation_kwargs", "request_type")
)


def _is_int(v: Any) -> bool:
    return type(v) is int


def _count(v: Any) -> bool:
    return type(v) is int and 0 <= v <= INT64_MAX


def _opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _list_of(v: Any, t: type) -> bool:
    return type(v) is list and all(type(x) is t for x in v)


class _Where:
    def __init__(self, path: str) -> None:
        self.path = path

    def header(self, field: str, problem: str, task: str | None = None) -> PlanError:
        at = f"task {task!r}: " if task is not None else ""
        return PlanError(f"{self.path}: invalid plan header: {at}{field}: {problem}")

    def record(self, task: Any, doc_id: Any, field: str, problem: str) -> PlanError:
        return PlanError(f"{self.path}: invalid plan record: task {task!r} doc {doc_id!r}: {field}: {problem}")


def validate_header(header: PlanHeader, path: str) -> None:
    """The header's invariants (types, ranges, task names unique, counts add up); ``PlanError`` when broken."""
    w = _Where(path)
    if type(header.lmeval_version) is not str:
        raise w.header("lmeval_version", "not a string")
    if type(header.config) is not dict:
        raise w.header("config", "not a map")
    if type(header.extra) is not dict:
        raise w.header("extra", "not a map")
    if type(header.plan_hash) is not str or not _HEX64.fullmatch(header.plan_hash):
        raise w.header("plan_hash", "not 64 hex digits")
    _check_model(header, w)
    if type(header.tasks) is not list or not header.tasks:
        raise w.header("tasks", "a plan has at least one task")
    names: set[str] = set()
    for t in header.tasks:
        name = t.name
        if type(name) is not str or not name:
            raise w.header("tasks.name", f"{name!r} is not a task name")
        if name in names:
            raise w.header("tasks.name", "named twice", name)
        names.add(name)
        if t.output_type not in OUTPUT_TYPES:
            raise w.header("output_type", f"{t.output_type!r} is not one of {', '.join(OUTPUT_TYPES)}", name)
        for f in ("n_docs", "n_instances", "num_fewshot"):
            if not _count(getattr(t, f)):
                raise w.header(f, f"{getattr(t, f)!r} is not a non-negative 64-bit integer", name)
        if type(t.task_hash) is not str or not _HEX64.fullmatch(t.task_hash):
            raise w.header("task_hash", "not 64 hex digits", name)
        if type(t.data_fingerprint) is not str:
            raise w.header("data_fingerprint", "not a string", name)
        for f in ("metric_list", "filter_list"):
            v = getattr(t, f)
            if type(v) is not list or not all(type(x) is dict for x in v):
                raise w.header(f, "not a list of maps", name)
        if not _list_of(t.groups, str):
            raise w.header("groups", "not a list of strings", name)
        if type(t.config) is not dict:
            raise w.header("config", "not a map", name)
    gnames: set[str] = set()
    for g in header.groups:
        if type(g.name) is not str or not g.name or g.name in gnames:
            raise w.header("groups.name", f"{g.name!r} is not a group name or is named twice")
        gnames.add(g.name)
        if not _list_of(g.subtasks, str):
            raise w.header("groups.subtasks", "not a list of strings", g.name)
        if type(g.aggregate_metric_list) is not list or not all(type(x) is dict for x in g.aggregate_metric_list):
            raise w.header("groups.aggregate_metric_list", "not a list of maps", g.name)
    for f, per in (("n_docs", "n_docs"), ("n_instances", "n_instances")):
        total = getattr(header, f)
        if not _count(total):
            raise w.header(f, f"{total!r} is not a non-negative 64-bit integer")
        summed = sum(getattr(t, per) for t in header.tasks)
        if summed != total:
            raise w.header(f, f"{total} but its tasks' {per} add up to {summed}")


def _check_model(header: PlanHeader, w: _Where) -> None:
    m = header.model
    if type(m.name) is not str:
        raise w.header("model.name", "not a string")
    if type(m.backend) is not str:
        raise w.header("model.backend", "not a string")
    for f in ("path", "tokenizer", "revision", "tokenizer_hash", "chat_template_hash", "config_hash", "processor_hash"):
        if not _opt_str(getattr(m, f)):
            raise w.header(f"model.{f}", "not a string")
    if m.add_bos_token is not None and type(m.add_bos_token) is not bool:
        raise w.header("model.add_bos_token", "not a boolean")
    if type(m.engine) is not dict:
        raise w.header("model.engine", "not a map")
    r = m.token_rule
    if r is not None:
        if r.add_bos_token is not None and type(r.add_bos_token) is not bool:
            raise w.header("model.token_rule.add_bos_token", "not a boolean")
        if r.prefix_token_id is not None and not (
            _is_int(r.prefix_token_id) and 0 <= r.prefix_token_id <= MAX_TOKEN_ID
        ):
            raise w.header("model.token_rule.prefix_token_id", f"{r.prefix_token_id!r} is not a token id")
        if type(r.prefix_token_source) is not str or not _opt_str(r.prefix_text):
            raise w.header("model.token_rule", "prefix_token_source or prefix_text is not a string")
        for f in ("special_prefix", "special_suffix"):
            v = getattr(r, f)
            if not _list_of(v, int) or not all(0 <= x <= MAX_TOKEN_ID for x in v):
                raise w.header(f"model.token_rule.{f}", "not a list of token ids")


class RecordValidator:
    """Checks a plan's record maps in stream order (``check`` each, then ``finish``). ``order``: the tasks in
    the order of their spans (a whole-plan stream); ``only``: the one task a per-task stream holds."""

    def __init__(self, header: PlanHeader, path: str, order: list[str] | None = None, only: str | None = None):
        self.w = _Where(path)
        self.summaries = {t.name: t for t in header.tasks}
        self.only = only
        self.order = [n for n in (order or []) if self._expects(n)]
        self.pos = -1  # index in order of the current task
        self.docs: dict[str, int] = {}
        self.insts: dict[str, int] = {}
        self.seen_docs: set[tuple[str, int]] = set()
        self.seen_ids: set[str] = set()
        self.doc: tuple[str, int] | None = None  # the doc whose Instances may follow
        self._ctx: Any = None  # the last context (and ids) checked, and the request hash's prefix over them
        self._ids: Any = None
        self._prefix = hashlib.sha256()
        self._pack = msgpack.Packer(use_bin_type=True).pack  # one per validator (a Packer is not thread-safe)

    def _expects(self, name: str) -> bool:
        s = self.summaries[name]
        return s.n_docs + s.n_instances > 0

    def check(self, obj: dict[str, Any]) -> None:
        task, doc_id = obj.get("task"), obj.get("doc_id")
        if type(task) is not str or task not in self.summaries:
            raise self.w.record(task, doc_id, "task", "not a task of the plan header")
        if self.only is not None and task != self.only:
            raise self.w.record(task, doc_id, "task", f"a record of another task in task {self.only!r}'s span")
        if not _count(doc_id):
            raise self.w.record(task, doc_id, "doc_id", "not a non-negative 64-bit integer")
        if self.only is None and (self.pos < 0 or self.order[self.pos] != task):
            self.pos += 1
            if self.pos >= len(self.order) or self.order[self.pos] != task:
                raise self.w.record(task, doc_id, "task", "records out of the order of the header's task spans")
        if obj["kind"] == "doc":
            self._doc(obj, task, doc_id)
        else:
            self._instance(obj, task, doc_id)

    def _doc(self, obj: dict[str, Any], task: str, doc_id: Any) -> None:
        r = self.w.record
        key = (task, doc_id)
        if key in self.seen_docs:
            raise r(task, doc_id, "doc_id", "a second record of this doc")
        self.seen_docs.add(key)
        doc = obj.get("doc")
        if type(doc) is not dict:
            raise r(task, doc_id, "doc", "not a map")
        choices = obj.get("choices")
        if choices is not None and not _list_of(choices, str):
            raise r(task, doc_id, "choices", "not a list of strings")
        if "target" not in obj:
            raise r(task, doc_id, "target", "missing")
        few: Any = obj.get("fewshot_ids")
        if not _list_of(few, int) or not all(0 <= x <= INT64_MAX for x in few):
            raise r(task, doc_id, "fewshot_ids", "not a list of non-negative integers")
        try:
            digest = hashlib.sha256(canonical_bytes(doc)).hexdigest()
        except (TypeError, ValueError):
            raise r(task, doc_id, "doc", "not canonical data") from None
        if obj.get("doc_hash") != digest:
            raise r(task, doc_id, "doc_hash", "is not sha256 of the document (a forged or corrupted plan)")
        self.docs[task] = self.docs.get(task, 0) + 1
        self.doc = key

    def _instance(self, obj: dict[str, Any], task: str, doc_id: Any) -> None:
        r = self.w.record
        if self.doc != (task, doc_id):
            raise r(task, doc_id, "doc_id", "an Instance not preceded by its doc's record")
        idx: Any = obj.get("idx")
        if not _count(idx):
            raise r(task, doc_id, "idx", f"{idx!r} is not a non-negative 64-bit integer")
        iid = obj.get("instance_id")
        if type(iid) is not str or not _HEX16.fullmatch(iid) or iid != instance_id_for(task, doc_id, idx):
            raise r(task, doc_id, "instance_id", f"{str(iid)[:40]!r} is not the id of this task, doc and idx {idx}")
        if iid in self.seen_ids:
            raise r(task, doc_id, "instance_id", f"Instance {iid} twice")
        self.seen_ids.add(iid)
        rt = obj.get("request_type")
        want = REQUEST_OF[self.summaries[task].output_type]
        if rt != want:
            raise r(
                task,
                doc_id,
                "request_type",
                f"{str(rt)[:40]!r}, but a {self.summaries[task].output_type} task asks {want}",
            )
        if type(obj.get("context")) is not str:
            raise r(task, doc_id, "context", "not a string")
        cont = obj.get("continuation")
        if (rt == "loglikelihood") != (type(cont) is str) or (cont is not None and type(cont) is not str):
            raise r(task, doc_id, "continuation", "a string exactly for loglikelihood requests")
        kw = obj.get("generation_kwargs")
        if kw is not None:
            if rt != "generate_until":
                raise r(task, doc_id, "generation_kwargs", f"set on a {rt} request")
            self._gen_kwargs(kw, task, doc_id)
        if "messages" in obj and (rt != "generate_until" or messages_problem(obj["messages"])):
            raise r(task, doc_id, "messages", messages_problem(obj["messages"]) or f"set on a {rt} request")
        if "media" in obj and media_problem(obj["media"], obj["context"]):
            raise r(task, doc_id, "media", str(media_problem(obj["media"], obj["context"])))
        if "tools" in obj and ("messages" not in obj or tools_problem(obj["tools"])):
            raise r(task, doc_id, "tools", tools_problem(obj["tools"]) or "set on a request without messages")
        rep: Any = obj.get("repeats")
        if not _is_int(rep) or not 1 <= rep <= MAX_REPEATS:
            raise r(task, doc_id, "repeats", f"{str(rep)[:40]} is not an integer in 1..{MAX_REPEATS}")
        ctx, ids = obj["context"], obj.get("context_ids")
        pack = self._pack
        if not (ctx is self._ctx and ids is self._ids):  # the choices of a doc share one context: check it once
            packed = self._token_ids(ids, "context_ids", task, doc_id)
            self._ctx, self._ids = ctx, ids
            self._prefix = h = hashlib.sha256(_MAP6 + _K_CTX)
            h.update(pack(ctx))
            h.update(_K_CTX_IDS)
            h.update(packed)
        cont_ids = obj.get("continuation_ids")
        packed = self._token_ids(cont_ids, "continuation_ids", task, doc_id)
        h = self._prefix.copy()
        try:
            h.update(_K_CONT + pack(cont) + _K_CONT_IDS + packed + _K_KW
                     + pack(None if kw is None else normalize(kw)) + _K_RT + pack(rt))  # fmt: skip
        except (TypeError, ValueError):
            raise r(task, doc_id, "generation_kwargs", "not canonical data") from None
        want_hash = h.hexdigest()
        if "media" in obj:  # images: a seventh key (plans/plan/records.py:request_hash_of)
            want_hash = request_hash_of(rt, ctx, cont, kw, ids, cont_ids, media_hashes(obj["media"]))
        if obj.get("request_hash") != want_hash:
            raise r(task, doc_id, "request_hash", "is not the hash of the request's content (a forged plan)")
        self.insts[task] = self.insts.get(task, 0) + 1

    def _token_ids(self, ids: Any, f: str, task: str, doc_id: int) -> bytes:
        """The packed ids (what the request hash takes) once they are checked: a list of ints (not bools) in
        range, in two C-speed passes (the types, then ``array`` for the range)."""
        packed = self._pack(ids)
        if ids is None:
            return packed
        if type(ids) is not list:
            raise self.w.record(task, doc_id, f, "not a list of token ids")
        if not set(map(type, ids)) <= _INT:
            bad = next(t for t in ids if type(t) is not int)
            raise self.w.record(task, doc_id, f, f"token id {str(bad)[:40]!r} is not an integer")
        try:
            array.array("I", ids)
        except OverflowError:
            bad = next(t for t in ids if not 0 <= t <= MAX_TOKEN_ID)
            raise self.w.record(
                task, doc_id, f, f"token id {bad} is outside any vocabulary (0..{MAX_TOKEN_ID})"
            ) from None
        return packed

    def _gen_kwargs(self, kw: Any, task: str, doc_id: int) -> None:
        def bad(key: str, problem: str) -> PlanError:
            return self.w.record(task, doc_id, f"generation_kwargs.{key}" if key else "generation_kwargs", problem)

        if type(kw) is not dict:
            raise bad("", "not a map")
        until = kw.get("until")
        if until is not None and type(until) is not str:
            if not _list_of(until, str) or len(until) > MAX_STOP_STRINGS:
                raise bad("until", f"not a string or a list of at most {MAX_STOP_STRINGS} strings")
        for k in _MAX_TOKEN_KEYS:
            v = kw.get(k)
            if v is not None and not (_is_int(v) and 0 <= v <= MAX_GEN_TOKS):
                raise bad(k, f"{str(v)[:40]} is not an integer in 0..{MAX_GEN_TOKS}")
        for k in _NUMBER_KEYS:
            v = kw.get(k)
            if v is not None and not (type(v) in (int, float) and math.isfinite(v) and abs(v) <= 1e6):
                raise bad(k, f"{str(v)[:40]} is not a finite number")
        for k in _INT_KEYS:
            v = kw.get(k)
            if v is not None and not (_is_int(v) and abs(v) <= INT64_MAX):
                raise bad(k, f"{str(v)[:40]} is not a 64-bit integer")
        v = kw.get("do_sample")
        if v is not None and type(v) is not bool:
            raise bad("do_sample", "not a boolean")

    def finish(self) -> None:
        names = [self.only] if self.only is not None else list(self.summaries)
        for name in names:
            s = self.summaries[name]
            got = (self.docs.get(name, 0), self.insts.get(name, 0))
            if got != (s.n_docs, s.n_instances):
                raise PlanError(
                    f"{self.w.path}: invalid plan: task {name!r}: {got[0]} docs and {got[1]} Instances, its header "
                    f"summary says {s.n_docs} and {s.n_instances}"
                )


def checked(
    objs: Iterable[dict[str, Any]], header: PlanHeader, path: str, order: list[str] | None, only: str | None = None
) -> Iterator[dict[str, Any]]:
    """``objs`` (record maps in stream order), each checked before it is yielded; the counts when they end."""
    v = RecordValidator(header, path, order, only)
    for obj in objs:
        v.check(obj)
        yield obj
    v.finish()
