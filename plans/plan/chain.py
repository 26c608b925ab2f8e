"""Chained plans (#56): a multi-turn task compiled stage by stage. Stage 1 is an ordinary plan (the first user
turn); stage k+1 is compiled from stage k's plan and results: each conversation's messages, the model's answer as
an assistant message, the next user turn, chat-templated. This module is the contract both sides share: the task
config key that makes a task multi-turn, the document key that carries the earlier answers, the header section
that chains a stage to its parent, the results hash, the message rule, and the chain file a run folder keeps
(``chain.json``). The design note is FORMAT.md's *Chained plans*."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lmeval.common import write_atomic
from lmeval.plans.errors import PlanError
from lmeval.plans.limits import MAX_MANIFEST_BYTES, InputError, loads_json, open_regular
from lmeval.plans.plan.canonical import content_hash
from lmeval.plans.plan.records import InstanceRecord

TURNS_FIELD = "turns_field"  # task config key: the document field that lists the conversation's user turns
ANSWERS_KEY = "turn_answers"  # key a stage k+1 document gets: the model's answers to turns 1..k, in order
CHAIN_KEY = "chain"  # header config section of a stage k+1 plan: {turn, parent: {plan_hash, results_hash}}
CHAIN_FILE = "chain.json"  # a chained run's folder: its stages, in order
MAX_TURNS = 64


@dataclass(frozen=True)
class ChainLink:
    """What a stage k+1 plan is compiled from: its turn, its parent stage's plan hash and the hash of the
    parent's results (``results_hash``). Part of the plan's config, so of its hash: the same parent plan with
    other answers gives another plan."""

    turn: int
    parent_plan_hash: str
    parent_results_hash: str

    def section(self) -> dict[str, Any]:
        return {"turn": self.turn, "parent": {"plan_hash": self.parent_plan_hash,
                                              "results_hash": self.parent_results_hash}}  # fmt: skip


def chain_link(config: dict[str, Any]) -> ChainLink | None:
    """The chain section of a plan's header config, or None for a stage 1 (or any other) plan."""
    sec = config.get(CHAIN_KEY)
    if sec is None:
        return None
    parent = sec.get("parent") if isinstance(sec, dict) else None
    turn = sec.get("turn") if isinstance(sec, dict) else None
    if type(turn) is not int or turn < 2 or not isinstance(parent, dict):
        raise PlanError(f"malformed chain section in the plan's config: {str(sec)[:80]!r}")
    return ChainLink(turn, str(parent.get("plan_hash", "")), str(parent.get("results_hash", "")))


def plan_turn(config: dict[str, Any]) -> int:
    """Which turn a plan asks: its chain section's, else 1."""
    link = chain_link(config)
    return link.turn if link is not None else 1


def turns_field(task_config: dict[str, Any]) -> str | None:
    """The document field listing a multi-turn task's user turns (task config ``turns_field``), else None."""
    f = task_config.get(TURNS_FIELD)
    return f if isinstance(f, str) and f else None


def turns_problem(value: Any) -> str | None:
    """Why a document's turns field is not a list of 1..MAX_TURNS strings, or None."""
    if type(value) is not list or not value:
        return "is not a non-empty list of user turns"
    if len(value) > MAX_TURNS:
        return f"has {len(value)} turns, over {MAX_TURNS}"
    for i, t in enumerate(value):
        if type(t) is not str:
            return f"turn {i + 1} is not a string"
    return None


def chain_answered(tasks: Iterable[Any], instances: Iterable[InstanceRecord]) -> list[InstanceRecord]:
    """The Instances of a stage whose answers the chain carries on (``results_hash`` covers their rows, the next
    stage continues them): idx 0 of each document of a multi-turn task (``tasks``: the header's summaries)."""
    fields = {t.name for t in tasks if turns_field(t.config) is not None}
    return [i for i in instances if i.task in fields and i.idx == 0]


def results_hash(rows: Iterable[tuple[str, int, int, str]]) -> str:
    """sha256 over a stage's answers, (task, doc_id, idx, response), in (task, doc_id, idx) order: the parent
    results' identity a stage k+1 plan records."""
    return content_hash([list(r) for r in sorted(rows, key=lambda r: (r[0], r[1], r[2]))])


def next_messages(messages: list[dict[str, str]], answer: str, user: str) -> list[dict[str, str]]:
    """The conversation of the next turn: the turn's messages, the model's answer verbatim as an assistant
    message, the next user turn."""
    return [*({"role": m["role"], "content": m["content"]} for m in messages),
            {"role": "assistant", "content": answer}, {"role": "user", "content": user}]  # fmt: skip


def stage_dir(root: str | os.PathLike[str], turn: int) -> Path:
    """Where a chained run keeps stage ``turn``'s results: ``ROOT/turnK``."""
    return Path(root) / f"turn{turn}"


@dataclass
class Stage:
    turn: int
    plan: str  # the stage's plan file, relative to the chain folder (chain.json files before #64: absolute)
    plan_hash: str
    results: str  # the stage's results folder, relative to the chain folder
    results_hash: str | None = None  # set once the stage's results are complete


def stage_plan_name(turn: int, plan_hash: str) -> str:
    """The file a chained run keeps stage ``turn``'s plan in, in its folder: ``turnK-<hash12>.msgpack``."""
    return f"turn{turn}-{plan_hash[:12]}.msgpack"


def new_stage(root: str | os.PathLike[str], turn: int, plan: str | os.PathLike[str], plan_hash: str) -> Stage:
    """The record of stage ``turn`` whose plan ``plan`` lies in the chain folder ``root``: every path relative
    to the folder, so the folder moved or copied elsewhere is still the same chain."""
    rel = Path(os.path.relpath(Path(plan).resolve(), Path(root).resolve()))
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"stage {turn}'s plan {plan} is not in the chain folder {root}")
    return Stage(turn, rel.as_posix(), plan_hash, stage_dir(root, turn).name)


@dataclass
class Chain:
    """``chain.json``: a chained run's stages in order; every other file of a stage is its results folder's."""

    stages: list[Stage] = field(default_factory=list)
    format: str = "lmeval-chain"
    version: int = 1

    def stage(self, turn: int) -> Stage | None:
        return next((s for s in self.stages if s.turn == turn), None)

    def put(self, stage: Stage) -> None:
        """Record ``stage``; later stages of another parent are dropped (they were compiled from other answers)."""
        kept = [s for s in self.stages if s.turn < stage.turn]
        old = self.stage(stage.turn)
        if old is not None and old.plan_hash == stage.plan_hash:
            kept += [s for s in self.stages if s.turn > stage.turn]
        self.stages = sorted([*kept, stage], key=lambda s: s.turn)


def write_chain(root: str | os.PathLike[str], chain: Chain) -> Path:
    p = Path(root) / CHAIN_FILE
    p.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(asdict(chain), indent=2, sort_keys=True) + "\n").encode()
    write_atomic(p, lambda f: f.write(data))
    return p


def is_chain(root: str | os.PathLike[str]) -> bool:
    return (Path(root) / CHAIN_FILE).is_file()


def read_chain(root: str | os.PathLike[str]) -> Chain:
    """A chained run's ``chain.json``; ``PlanError`` (one line naming the file) when missing or malformed."""
    p = Path(root) / CHAIN_FILE
    try:
        with open_regular(p, max_bytes=MAX_MANIFEST_BYTES, what="chain file") as f:
            data = loads_json(f.read())
    except (InputError, OSError) as e:
        raise PlanError(f"{p}: not a chained run ({e})") from None
    except ValueError as e:
        raise PlanError(f"{p}: malformed chain file: {e}") from None
    try:
        if not isinstance(data, dict) or data.get("format") != "lmeval-chain" or data.get("version") != 1:
            raise TypeError("not an lmeval-chain version 1 file")
        stages = [Stage(**s) for s in data["stages"]]
        for s in stages:
            if type(s.turn) is not int or not all(isinstance(v, str) for v in (s.plan, s.plan_hash, s.results)):
                raise TypeError(f"a stage's turn, plan, plan_hash or results has the wrong type ({s.turn!r:.20})")
            if s.results_hash is not None and not isinstance(s.results_hash, str):
                raise TypeError(f"stage {s.turn}: results_hash is not a string")
    except (TypeError, KeyError) as e:
        raise PlanError(f"{p}: malformed chain file: {e}") from None
    return Chain(stages=stages)


def _inside(root: str | os.PathLike[str], stage: Stage, key: str, value: str) -> Path:
    """``value`` (a stage's ``key``: a path relative to the chain folder) under ``root``; a path that leaves the
    folder is refused."""
    p = Path(value)
    if not value or p.is_absolute() or ".." in p.parts:
        raise PlanError(f"{Path(root) / CHAIN_FILE}: stage {stage.turn}: {key}: {value!r} is not a path inside the "
                        "chain folder")  # fmt: skip
    return Path(root) / p


def stage_plan(root: str | os.PathLike[str], stage: Stage) -> Path:
    """A stage's plan file: relative to the chain folder ``root`` (as recorded since #64). A chain.json written
    before records absolute paths: such a path while the file is there, else the file of its name in the chain
    folder (the folder was moved: stages after the first were written there); ``PlanError`` naming the chain
    file, the stage and the field when neither is there."""
    p = Path(stage.plan)
    if not p.is_absolute():
        return _inside(root, stage, "plan", stage.plan)
    if p.is_file():
        return p
    if (Path(root) / p.name).is_file():
        return Path(root) / p.name
    raise PlanError(f"{Path(root) / CHAIN_FILE}: stage {stage.turn}: plan: {p} is not there, nor {p.name} in the "
                    "chain folder (a chain.json of an older lmeval records plans by absolute path; put the plan "
                    "back there or beside chain.json)")  # fmt: skip


def stage_results(root: str | os.PathLike[str], stage: Stage) -> Path:
    """A stage's results folder, relative to the chain folder ``root``."""
    return _inside(root, stage, "results", stage.results)
