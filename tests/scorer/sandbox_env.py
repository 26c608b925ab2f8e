"""What this machine should give the sandbox, decided from the machine itself (not from the sandbox's own
probe, which is what is under test), and a visible note when a test can only check a weaker outcome.

CI runs as root with cgroup v1 memory and pids controllers, so there the strong branches must run: a sandbox
that fails to find its cgroups fails the test instead of quietly taking the weaker branch."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


class WeakerCheck(UserWarning):
    """A test checked a weaker outcome because this machine lacks what the strong one needs."""


def machine_has_cgroups() -> bool:
    """Root with writable memory and pids controllers (v1 hierarchies or the v2 unified tree)."""
    if os.geteuid() != 0:
        return False
    v1 = [CGROUP / "memory", CGROUP / "pids"]
    if all(d.is_dir() and os.access(d, os.W_OK) for d in v1):
        return True
    controllers = CGROUP / "cgroup.controllers"
    try:
        have = set(controllers.read_text().split())
    except OSError:
        return False
    return {"memory", "pids"} <= have and os.access(CGROUP, os.W_OK)


def weaker(test: str, why: str) -> None:
    """Say (in pytest's warnings summary) that ``test`` checked only the weaker outcome, and why."""
    warnings.warn(f"{test}: weaker check only ({why})", WeakerCheck, stacklevel=2)
