"""Typed records of a plan: one header, then per document a DocRecord followed by its InstanceRecords.

These dataclasses are the contract between compiler, executor, scorer and diff. They hold data only
(str, int, float, bool, None, lists and string-keyed maps): never code, never pickles.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import msgpack

from lmeval.plans.plan.canonical import canonical_bytes, content_hash, normalize
from lmeval.plans.plan.tokenization import TokenRule

FORMAT = "lmeval-plan"
VERSION = 2  # 2: no machine paths in the header (plans/plan/identity.py); zstd-framed records (plans/plan/storage.py)

# the vocabulary every stage uses (lm-eval 0.4.13's names): a task's output_type, and the request types of its
# Instances (a multiple_choice task asks one loglikelihood request per choice)
OUTPUT_TYPES: tuple[str, ...] = ("loglikelihood", "multiple_choice", "loglikelihood_rolling", "generate_until")
REQUEST_TYPES: tuple[str, ...] = ("loglikelihood", "loglikelihood_rolling", "generate_until")


def instance_id_for(task: str, doc_id: int, idx: int) -> str:
    """Stable id of an Instance: 16 hex digits of sha256(task, doc_id, idx). Shards and resume key on it."""
    return hashlib.sha256(f"{task}\x00{doc_id}\x00{idx}".encode()).hexdigest()[:16]


def shard_of(instance_id: str, n_shards: int) -> int:
    """The shard (0-based) an Instance belongs to when a plan is split ``n_shards`` ways."""
    return int(instance_id, 16) % n_shards


@dataclass(frozen=True)
class ModelInfo:
    """What the plan was compiled for: enough to refuse a model whose tokenizer differs. Identity only: a
    Hub model's id and revision, never where a model lives on disk (plans/plan/identity.py); a plan for a local
    model directory is executed with ``model.path=DIR``."""

    name: str
    path: str | None = None  # the Hub id (org/name) of a Hub model; never a machine path
    backend: str = "vllm"
    tokenizer: str | None = None  # tokenizer identity: org/name@sha, tiny-v1 or the model directory's name
    tokenizer_hash: str | None = None  # sha256 over the tokenizer's vocabulary/merges/config, if known
    chat_template_hash: str | None = None  # sha256 of the chat template text when one was applied
    add_bos_token: bool | None = False  # None: the tokenizer's own default (see plans/plan/tokenization.py)
    engine: dict[str, Any] = field(default_factory=dict)  # engine args from the model config
    token_rule: TokenRule | None = None  # the rule the token ids were made with (None: plan without ids)
    revision: str | None = None  # the Hub snapshot's commit sha the plan was compiled against
    config_hash: str | None = None  # sha256 of the model's config.json
    processor_hash: str | None = None  # a vision-language model's processor settings (common/modelref.py)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.token_rule is None:
            del d["token_rule"]  # plans without a recorded rule keep their bytes and hash
        if self.processor_hash is None:
            del d["processor_hash"]  # text models' plans keep their bytes and hash
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelInfo:
        known = _known(cls, d)
        if isinstance(known.get("token_rule"), dict):
            known["token_rule"] = TokenRule.from_dict(known["token_rule"])
        return cls(**known)


# TaskSummary fields that copy a key of the task's resolved ``config`` (field -> config key). The config is
# authoritative; the copies are denormalised for readers that do not parse task configs (``lmeval show``, diff,
# the lock, the scorer's metric and filter set-up), which read the fields. ``TaskSummary.of_config`` is the one
# place a header takes them from the config; ``TaskSummary.from_dict`` (every plan reader) refuses a summary
# whose copy differs from its config. A config without the key (a plan built by a tool) leaves the field alone.
CONFIG_COPIES: dict[str, str] = {
    "name": "task",
    "output_type": "output_type",
    "num_fewshot": "num_fewshot",
    "metric_list": "metric_list",
    "filter_list": "filter_list",
}


@dataclass(frozen=True)
class TaskSummary:
    name: str
    output_type: str
    n_docs: int
    n_instances: int
    num_fewshot: int
    task_hash: str  # sha256 over the task's config and all of its doc and instance records
    data_fingerprint: str  # sha256 over the docs as loaded (before few-shot), in order
    version: Any = None
    metric_list: list[dict[str, Any]] = field(default_factory=list)  # lm-eval metric_list entries (data only)
    filter_list: list[dict[str, Any]] = field(default_factory=list)  # lm-eval filter_list entries (data only)
    groups: list[str] = field(default_factory=list)  # groups this task belongs to
    config: dict[str, Any] = field(default_factory=dict)  # the resolved task config (data only)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of_config(
        cls,
        config: dict[str, Any],
        *,
        n_docs: int,
        n_instances: int,
        data_fingerprint: str,
        version: Any = None,
        groups: list[str] | None = None,
        task_hash: str = "",
    ) -> TaskSummary:
        """The summary of a task whose resolved config is ``config``: the ``CONFIG_COPIES`` fields taken from it."""
        return cls(
            **{f: config[k] for f, k in CONFIG_COPIES.items()},
            n_docs=n_docs,
            n_instances=n_instances,
            task_hash=task_hash,
            data_fingerprint=data_fingerprint,
            version=version,
            groups=list(groups or []),
            config=config,
        )

    def config_disagreement(self) -> str | None:
        """Why a ``CONFIG_COPIES`` field differs from its config's value (canonical encodings compared), or None."""
        if not isinstance(self.config, dict):
            return f"task {self.name}: config is not a map"
        for f, k in CONFIG_COPIES.items():
            if k not in self.config:
                continue
            copy, value = getattr(self, f), self.config[k]
            try:
                same = canonical_bytes(copy) == canonical_bytes(value)
            except TypeError:
                same = False
            if not same:
                return (
                    f"task {self.name}: {f} is {_short(copy)} but its config's {k} is {_short(value)} "
                    f"(the summary copies the config: a forged or corrupted plan)"
                )
        return None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskSummary:
        """``ValueError`` when a copied field disagrees with the config (``config_disagreement``)."""
        summary = cls(**_known(cls, d))
        problem = summary.config_disagreement()
        if problem:
            raise ValueError(problem)
        return summary


@dataclass(frozen=True)
class GroupSummary:
    """A group (e.g. mmlu, mmlu_stem) and how its subtasks aggregate."""

    name: str
    subtasks: list[str]  # task or group names, in config order
    aggregate_metric_list: list[dict[str, Any]] = field(default_factory=list)
    version: Any = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupSummary:
        return cls(**_known(cls, d))


@dataclass(frozen=True)
class PlanHeader:
    config: dict[str, Any]  # the fully resolved Hydra config without its locations (plans/plan/identity.py)
    model: ModelInfo
    tasks: list[TaskSummary]
    groups: list[GroupSummary] = field(default_factory=list)
    lmeval_version: str = "0"
    n_docs: int = 0
    n_instances: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. skipped bad lines of a JSONL task spec
    plan_hash: str = ""  # filled in by the writer; sha256 over everything else (see FORMAT.md)
    format: str = FORMAT
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "version": self.version,
            "lmeval_version": self.lmeval_version,
            "config": self.config,
            "model": self.model.to_dict(),
            "tasks": [t.to_dict() for t in self.tasks],
            "groups": [g.to_dict() for g in self.groups],
            "n_docs": self.n_docs,
            "n_instances": self.n_instances,
            "extra": self.extra,
            "plan_hash": self.plan_hash,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlanHeader:
        return cls(
            format=d["format"],
            version=d["version"],
            lmeval_version=d.get("lmeval_version", "0"),
            config=d.get("config", {}),
            model=ModelInfo.from_dict(d["model"]),
            tasks=[TaskSummary.from_dict(t) for t in d.get("tasks", [])],
            groups=[GroupSummary.from_dict(g) for g in d.get("groups", [])],
            n_docs=d.get("n_docs", 0),
            n_instances=d.get("n_instances", 0),
            extra=d.get("extra", {}),
            plan_hash=d.get("plan_hash", ""),
        )

    def task(self, name: str) -> TaskSummary:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass(frozen=True)
class DocRecord:
    """Everything the scorer needs about one document, so no scorer reloads data or configs."""

    task: str
    doc_id: int
    doc: dict[str, Any]  # the document as processed (after process_docs)
    target: Any  # doc_to_target result: str, int, or list of them
    choices: list[str] | None = None  # doc_to_choice result, when the task has choices
    fewshot_ids: list[int] = field(default_factory=list)  # pool indices of the few-shot examples drawn
    doc_hash: str = ""  # sha256 of the canonical doc

    kind: str = "doc"

    def to_dict(self) -> dict[str, Any]:
        return {  # every field (tests/plans check it against dataclasses.fields)
            "task": self.task,
            "doc_id": self.doc_id,
            "doc": self.doc,
            "target": self.target,
            "choices": self.choices,
            "fewshot_ids": self.fewshot_ids,
            "doc_hash": self.doc_hash,
            "kind": self.kind,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DocRecord:
        return cls(**_known(cls, d))


@dataclass(frozen=True)
class InstanceRecord:
    """One model request, as lm-eval's Instance: ``arguments`` is rebuilt from context/continuation/kwargs."""

    instance_id: str
    task: str
    doc_id: int
    idx: int
    request_type: str  # loglikelihood | loglikelihood_rolling | generate_until
    context: str
    continuation: str | None = None  # loglikelihood: the continuation string as lm-eval passes it
    generation_kwargs: dict[str, Any] | None = None  # generate_until: lm-eval's gen kwargs (until, ...)
    repeats: int = 1
    context_ids: list[int] | None = None  # token ids the executor feeds (after the whitespace move)
    continuation_ids: list[int] | None = None
    request_hash: str = ""  # sha256 of what the model sees: request type, strings, token ids, kwargs

    kind: str = "instance"
    # generate_until of a chat-templated plan: the role/content messages the context was rendered from
    # (plans/plan/chatmessages.py); absent from the stored map when None, so other plans keep their bytes
    messages: list[dict[str, str]] | None = None
    # an Instance that shows the model images: their references in order (plans/plan/media.py:MediaRef maps);
    # absent from the stored map when None, so text-only plans keep their bytes
    media: list[dict[str, Any]] | None = None
    # generate_until of a tool-call task: the tools (JSON schemas) handed to the chat template with the messages
    # (plans/plan/toolcalls.py); absent from the stored map when None
    tools: list[dict[str, Any]] | None = None

    @property
    def arguments(self) -> tuple[Any, ...]:
        """lm-eval's ``Instance.arguments`` for this request."""
        if self.request_type == "loglikelihood":
            return (self.context, self.continuation)
        if self.request_type == "loglikelihood_rolling":
            return (self.context,)
        return (self.context, self.generation_kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {  # every field, messages only when set (tests/plans check it against dataclasses.fields)
            "instance_id": self.instance_id,
            "task": self.task,
            "doc_id": self.doc_id,
            "idx": self.idx,
            "request_type": self.request_type,
            "context": self.context,
            "continuation": self.continuation,
            "generation_kwargs": self.generation_kwargs,
            "repeats": self.repeats,
            "context_ids": self.context_ids,
            "continuation_ids": self.continuation_ids,
            "request_hash": self.request_hash,
            "kind": self.kind,
            **({} if self.messages is None else {"messages": self.messages}),
            **({} if self.media is None else {"media": self.media}),
            **({} if self.tools is None else {"tools": self.tools}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InstanceRecord:
        return cls(**_known(cls, d))


_INT = frozenset({int})


def request_hash_of(
    request_type: str,
    context: str,
    continuation: str | None,
    generation_kwargs: dict[str, Any] | None,
    context_ids: list[int] | None,
    continuation_ids: list[int] | None,
    media: list[str] | None = None,
) -> str:
    """What identifies a request to a model: two Instances with the same hash get the same answer.

    sha256 of the canonical encoding of the map of these six fields. The compiler calls this once per
    Instance, so the usual case packs in one go: a map built in sorted key order from values that are already
    canonical (strings, None, lists of ints) packs to the canonical bytes. ``media``: the ordered sha256s of
    the images the request shows (``plans/plan/media.py``), a seventh key only when there are images."""
    if media or not (
        type(request_type) is str
        and type(context) is str
        and (continuation is None or type(continuation) is str)
        and (context_ids is None or (type(context_ids) is list and set(map(type, context_ids)) <= _INT))
        and (continuation_ids is None or (type(continuation_ids) is list and set(map(type, continuation_ids)) <= _INT))
    ):
        fields: dict[str, Any] = {
            "request_type": request_type,
            "context": context,
            "continuation": continuation,
            "generation_kwargs": generation_kwargs,
            "context_ids": context_ids,
            "continuation_ids": continuation_ids,
        }
        if media:
            fields["media"] = list(media)
        return content_hash(fields)
    m = {
        "context": context,
        "context_ids": context_ids,
        "continuation": continuation,
        "continuation_ids": continuation_ids,
        "generation_kwargs": None if generation_kwargs is None else normalize(generation_kwargs),
        "request_type": request_type,
    }
    return hashlib.sha256(msgpack.packb(m, use_bin_type=True)).hexdigest()


@dataclass
class Plan:
    """A whole plan in memory (small plans, tests). Large plans are streamed with ``PlanReader``."""

    header: PlanHeader
    docs: list[DocRecord]
    instances: list[InstanceRecord]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}
