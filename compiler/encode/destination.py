"""Where a compiled plan is written: ``--out`` / ``run.out``, else ``lmeval-plans/<name>-<hash12>.msgpack``
(relative to the working folder), the name made from the selected task names. The default folder's name is no
Python identifier, so it can never be (or land inside) a source package: run from a checkout's root, lmeval
writes beside ``plans/`` (the contract package), never into it."""

from __future__ import annotations

import re
from pathlib import Path

from lmeval.plans import PlanHeader

DEFAULT_PLAN_DIR = "lmeval-plans"


def default_name(header: PlanHeader) -> str:
    names = list(header.extra.get("selected") or [t.name for t in header.tasks])
    if len(names) > 3:
        names = names[:3] + [f"{len(names) - 3}more"]
    name = "+".join(names) or "plan"
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", name)
    return name[:80]


def plan_path(header: PlanHeader, out: str | None = None) -> Path:
    """``out`` (the --out option or ``run.out``), else ``lmeval-plans/<name>-<hash12>.msgpack`` (relative to
    the cwd)."""
    return Path(out) if out else Path(DEFAULT_PLAN_DIR) / f"{default_name(header)}-{header.plan_hash[:12]}.msgpack"
