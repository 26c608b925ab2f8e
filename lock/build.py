"""Compile every shipped task config into lock entries, then check them against the lock or rewrite it.

Every config in ``conf/task/`` is compiled with the tiny reference model at default settings, and every
multiple-choice one in each prompt format too (``NAME@cf``, ``NAME@mcf``, ``NAME@gen``: compiler/formats); data-backed
tasks read the reference data (``<data_dir>/<name>/<split>.jsonl``) with the lock's ``run.limit``; the
embedded ``arith`` task is compiled whole and its plan kept beside the lock (``reference/arith.msgpack``).
``check`` and ``update`` return data (``LockCheck``, ``LockUpdate``); ``lmeval lock`` prints them.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.compiler import CONF_DIR
from lmeval.lock.lockfile import (
    LOCK_PATH,
    REFERENCE_TASK,
    Lock,
    LockCheck,
    compare_locks,
    entries_from_header,
    load_lock,
)
from lmeval.lock.lockfile import write_lock as _write_lock
from lmeval.plans import VERSION, UserError

DEFAULT_LIMIT = 100
# Shipped configs that are front ends for user files, not tasks: nothing of their own to lock.
SKIP = {
    "jsonl": "a front end for a user's JSONL spec file (task.jsonl.path); no prompts of its own",
    "trajectory": "a front end for a user's recorded conversations (task.trajectory.path); no prompts of its own",
}
# A source checkout (the lock is its checked-in file) rather than an installed package: lmeval/lock is a link
# to <checkout>/lock, so this file resolves to <checkout>/lock/build.py next to pyproject.toml.
CHECKOUT = Path(__file__).resolve().parents[1]
IS_CHECKOUT = (CHECKOUT / "pyproject.toml").is_file() and (CHECKOUT / "lmeval").is_dir()
DATA_HINT = "pass --data-dir DIR or set LMEVAL_DATA_DIR (the reference data, files <name>/<split>.jsonl)"

Log = Callable[[str], None] | None


def default_data_dir() -> Path:
    """``$LMEVAL_DATA_DIR``, else ``../shared/data`` beside a source checkout; an installed lmeval has no
    default (its reference data is wherever the user keeps it)."""
    env = os.environ.get("LMEVAL_DATA_DIR")
    if env:
        return Path(env)
    if IS_CHECKOUT:
        return (CHECKOUT.parent / "shared" / "data").resolve()
    raise UserError(f"no reference data directory: {DATA_HINT}")


def shipped_configs(conf_dir: Path = CONF_DIR / "task") -> list[str]:
    return sorted(p.stem for p in conf_dir.glob("*.yaml"))


def overrides_for(name: str, data_dir: Path, limit: int | None) -> list[str]:
    if name == REFERENCE_TASK:
        return [f"+task={name}"]
    ov = [f"+task={name}", f"run.data_dir={data_dir}"]
    if needs_chat_template(name):
        ov.append("run.apply_chat_template=true")
    return ov + ([f"run.limit={limit}"] if limit else [])


def needs_chat_template(name: str, conf_dir: Path = CONF_DIR / "task") -> bool:
    """A task that compiles only through the model's chat template, so it is locked with
    ``run.apply_chat_template=true``: a conversation task (``doc_to_messages``/``doc_to_tools``:
    compiler/tasks/conversation.py) or a multi-turn one (``turns_field``: a chained plan's turn 1,
    plans/plan/chain.py)."""
    import yaml

    path = conf_dir / f"{name.split('@')[0]}.yaml"
    if not path.is_file():
        return False
    cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    keys = ("doc_to_messages", "doc_to_tools", "turns_field")
    return isinstance(cfg, dict) and any(cfg.get(k) for k in keys)


def build_lock(
    data_dir: Path,
    limit: int | None,
    reference_out: Path,
    extra: list[str] | None = None,
    configs: list[str] | None = None,
    log: Log = None,
) -> Lock:
    """Compile every shipped task config and return the lock entries; the reference plan goes to
    ``reference_out``. ``extra``: overrides added to every compile (tests use it for deliberate changes)."""
    from lmeval.compiler import compile_plan
    from lmeval.plans import PROMPT_FORMATS, format_name, write_plan

    if not data_dir.is_dir():
        raise UserError(f"--data-dir {data_dir}: no such directory (the reference data, files <name>/<split>.jsonl)")
    names = list(configs) if configs is not None else shipped_configs()
    lock = Lock(settings={})
    model: dict[str, Any] = {}
    for name in names:
        if name in SKIP:
            lock.skipped[name] = SKIP[name]
            continue
        ov = overrides_for(name, data_dir, limit)
        t0 = time.perf_counter()
        header, records = compile_plan(ov + list(extra or []))
        if log:
            log(
                f"compiled {name}: {len(header.tasks)} tasks, {header.n_instances} instances "
                f"in {time.perf_counter() - t0:.1f} s"
            )
        tasks, groups = entries_from_header(name, header)
        lock.tasks.update(tasks)
        lock.groups.update(groups)
        lock.configs[name] = {
            "overrides": [o.replace(str(data_dir), "<data_dir>") for o in ov],
            "tasks": [t.name for t in header.tasks],
            "groups": [g.name for g in header.groups],
        }
        model = {
            "model": header.model.name,
            "tokenizer": header.model.tokenizer,
            "tokenizer_hash": header.model.tokenizer_hash,
        }
        if configs is None and "@" not in name and any(t.output_type == "multiple_choice" for t in header.tasks):
            names += [format_name(name, fmt) for fmt in PROMPT_FORMATS]  # the shipped formats (compiler/formats)
        if name == REFERENCE_TASK:
            write_plan(reference_out, header, records)
            lock.reference = {"task": name, "plan": f"reference/{reference_out.name}", "plan_hash": header.plan_hash}
    lock.settings = {
        **model,
        "limit": limit,
        "limit_applies_to": "data-backed tasks (the embedded task is compiled whole)",
        "data": "run.data_dir=<reference data: ../shared/data, see its SOURCES.md>",
        "plan_format_version": VERSION,
    }
    return lock


def check(
    lock_path: Path, data_dir: Path, extra: list[str] | None = None, log: Log = None, configs: list[str] | None = None
) -> LockCheck:
    """Compile everything (or only ``configs``) with the lock's settings and compare with the lock; when the
    embedded task moved, the result carries the prompt-by-prompt diff against the reference plan."""
    from lmeval.diff import diff_plans, render_text

    lock = load_lock(lock_path)
    limit = lock.settings.get("limit")
    if configs is not None:
        keep = set(configs)
        lock.tasks = {k: v for k, v in lock.tasks.items() if v.get("config") in keep}
        lock.groups = {k: v for k, v in lock.groups.items() if v.get("config") in keep}
    with tempfile.TemporaryDirectory(prefix="lmeval-lock-") as tmp:
        fresh_ref = Path(tmp) / f"{REFERENCE_TASK}.msgpack"
        new = build_lock(data_dir, limit, fresh_ref, extra=extra, log=log, configs=configs)
        result = compare_locks(lock, new)
        ref_moved = any(m.kind == "task" and m.new and m.new.get("config") == REFERENCE_TASK for m in result.moved)
        ref_path = lock_path.parent / lock.reference.get("plan", f"reference/{REFERENCE_TASK}.msgpack")
        if ref_moved and ref_path.is_file():
            result.reference_diff = render_text(diff_plans(str(ref_path), str(fresh_ref), show=3))
    return result


@dataclass
class LockUpdate:
    path: Path  # the lock file written
    changes: LockCheck | None  # what moved against the previous lock; None when there was none


def update(lock_path: Path, data_dir: Path, limit: int | None, log: Log = None) -> LockUpdate:
    """Rewrite the lock (and its reference plan beside it, under ``reference/``) from the shipped configs."""
    if lock_path.resolve() == LOCK_PATH.resolve() and not IS_CHECKOUT:
        raise UserError(
            f"--update: {LOCK_PATH} belongs to the installed lmeval package; "
            "the lock is rewritten in a source checkout, or pass --lock FILE to write one elsewhere"
        )
    old: Lock | None = None
    if lock_path.is_file():
        old = load_lock(lock_path)
        if limit is None:
            limit = old.settings.get("limit")
    elif limit is None:
        limit = DEFAULT_LIMIT
    ref_dir = lock_path.parent / "reference"
    ref_dir.mkdir(parents=True, exist_ok=True)
    new = build_lock(data_dir, limit or None, ref_dir / f"{REFERENCE_TASK}.msgpack", log=log)
    changes = compare_locks(old, new) if old is not None else None
    return LockUpdate(_write_lock(new, lock_path), changes)
