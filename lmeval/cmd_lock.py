"""``lmeval lock [--update]``: check (or rewrite) plans/lock.json, the task hashes of every shipped task config.

Every config in ``conf/task/`` is compiled with the tiny reference model at default settings; data-backed
tasks read the reference data (``--data-dir``, default ``$LMEVAL_DATA_DIR`` or ``../shared/data``) with the
lock's ``run.limit``; the embedded ``arith`` task is compiled whole and its plan kept in ``plans/reference/``.
Exit 0 when every hash matches, 1 when any moved (with a summary of what and why), 2 on error.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from lmeval.lock.lockfile import (
    LOCK_PATH,
    REFERENCE_DIR,
    REFERENCE_TASK,
    Lock,
    compare,
    entries_from_header,
    load_lock,
    write_lock,
)
from lmeval.plans.errors import UserError
from lmeval.plans.records import VERSION

REPO = Path(__file__).resolve().parents[1]
CONF_TASK = REPO / "conf" / "task"
DEFAULT_LIMIT = 100
# Shipped configs that are front ends for user files, not tasks: nothing of their own to lock.
SKIP = {"jsonl": "a front end for a user's JSONL spec file (task.jsonl.path); no prompts of its own"}


def default_data_dir() -> Path:
    env = os.environ.get("LMEVAL_DATA_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "data").resolve()


def shipped_configs(conf_dir: Path = CONF_TASK) -> list[str]:
    return sorted(p.stem for p in conf_dir.glob("*.yaml"))


def overrides_for(name: str, data_dir: Path, limit: int | None) -> list[str]:
    if name == REFERENCE_TASK:
        return [f"+task={name}"]
    ov = [f"+task={name}", f"run.data_dir={data_dir}"]
    return ov + ([f"run.limit={limit}"] if limit else [])


def build_lock(
    data_dir: Path,
    limit: int | None,
    reference_out: Path,
    extra: list[str] | None = None,
    configs: list[str] | None = None,
    log: Any = None,
) -> Lock:
    """Compile every shipped task config and return the lock entries; the reference plan goes to
    ``reference_out``. ``extra``: overrides added to every compile (tests use it for deliberate changes)."""
    from lmeval.compiler import compile_plan
    from lmeval.plans.io import write_plan

    if not data_dir.is_dir():
        raise UserError(f"--data-dir {data_dir}: no such directory (the reference data, files <name>/<split>.jsonl)")
    names = configs if configs is not None else shipped_configs()
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


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "lock",
        help="check (or --update) plans/lock.json: task hashes of every shipped task config",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--update", action="store_true", help="rewrite the lock and the reference plan")
    p.add_argument(
        "--data-dir", default=None, help="reference data directory (default: $LMEVAL_DATA_DIR or ../shared/data)"
    )
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help=f"run.limit for data-backed tasks (default: the lock's, else {DEFAULT_LIMIT}; 0 = full)",
    )
    p.add_argument("--lock", default=str(LOCK_PATH), help="lock file (default plans/lock.json)")
    p.add_argument("--verbose", "-v", action="store_true", help="log each compile")
    p.set_defaults(func=run)


def check(
    lock_path: Path, data_dir: Path, extra: list[str] | None = None, log: Any = None, configs: list[str] | None = None
) -> tuple[int, str]:
    """Compile everything (or only ``configs``) with the lock's settings and compare: (exit status, summary)."""
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
        result = compare(lock, new)
        ref_moved = any(m.kind == "task" and m.new and m.new.get("config") == REFERENCE_TASK for m in result.moved)
        ref_path = lock_path.parent / lock.reference.get("plan", f"reference/{REFERENCE_TASK}.msgpack")
        if ref_moved and ref_path.is_file():
            result.reference_diff = render_text(diff_plans(str(ref_path), str(fresh_ref), show=3))
    return (0 if result.ok else 1), result.summary()


def update(lock_path: Path, data_dir: Path, limit: int | None, log: Any = None) -> tuple[str, Path]:
    old: Lock | None = None
    if lock_path.is_file():
        old = load_lock(lock_path)
        if limit is None:
            limit = old.settings.get("limit")
    elif limit is None:
        limit = DEFAULT_LIMIT
    ref_dir = lock_path.parent / "reference" if lock_path != LOCK_PATH else REFERENCE_DIR
    ref_dir.mkdir(parents=True, exist_ok=True)
    new = build_lock(data_dir, limit or None, ref_dir / f"{REFERENCE_TASK}.msgpack", log=log)
    summary = compare(old, new).summary() if old is not None else "new lock"
    return summary, write_lock(new, lock_path)


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    lock_path = Path(args.lock)
    log = (lambda m: print(m, flush=True)) if args.verbose else None
    if args.update:
        summary, path = update(lock_path, data_dir, args.limit, log=log)
        if not summary.startswith("lock ok"):
            print(summary.split("\n\nIf these prompt changes")[0])
        print(path)
        return 0
    if args.limit is not None:
        raise UserError("--limit only applies with --update (a check uses the lock's own settings)")
    rc, summary = check(lock_path, data_dir, log=log)
    print(summary)
    return rc
