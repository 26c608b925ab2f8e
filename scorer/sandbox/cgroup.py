"""One control group per sandboxed program: memory and process caps for its whole process tree.

Per-process rlimits cap each process, not the program: four children of 800 MB each stay under a 1 GiB
``RLIMIT_AS``. A cgroup counts them together. ``cgroup_root()`` finds where this process may create
cgroups (probed once): cgroup v1 ``memory`` and ``pids`` hierarchies (the groups this process is in, from
``/proc/self/cgroup``), or else a cgroup v2 group whose ``cgroup.subtree_control`` enables both. Each
program gets a fresh ``SampleCgroup``; the launcher moves the program into it just before ``exec`` (so the
launcher and the pid-namespace init do not count), the parent watches it while the program runs
(``cause()``: ``memory`` when the kernel OOM-killed a process in it, ``processes`` when a fork was refused),
then kills whatever is left in it and removes it (``close()``).
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass

from lmeval.scorer.sandbox.result import MEMORY

PROCESSES = "processes"

_V1_ROOT = "/sys/fs/cgroup"
_counter = itertools.count()
_lock = threading.Lock()  # the counter
_probe_lock = threading.Lock()
_root_cache: list[tuple[dict[str, str], int] | str] = []


def _read(path: str) -> str:
    with open(path, encoding="ascii") as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _own_groups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's group path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    try:
        text = _read("/proc/self/cgroup")
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for ctrl in parts[1].split(",") if parts[1] else [""]:
            out[ctrl] = parts[2]
    return out


def _v2_mount() -> str | None:
    try:
        text = _read("/proc/self/mountinfo")
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split(" ")
        sep = fields.index("-") if "-" in fields else -1
        if sep > 0 and fields[sep + 1] == "cgroup2":
            return fields[4]
    return None


def _probe() -> tuple[dict[str, str], int] | str:
    if os.geteuid() != 0:
        return "not running as root"
    own = _own_groups()
    v1: dict[str, str] = {}
    for ctrl in ("memory", "pids"):
        if ctrl in own:
            d = os.path.join(_V1_ROOT, ctrl) + own[ctrl]
            if os.path.isdir(d) and os.access(d, os.W_OK):
                v1[ctrl] = d
    if len(v1) == 2:
        return _try(v1, 1)
    mount = _v2_mount()
    if mount and "" in own:
        d = mount + own[""]
        try:
            enabled = _read(os.path.join(d, "cgroup.subtree_control")).split()
        except OSError:
            enabled = []
        if {"memory", "pids"} <= set(enabled):
            return _try({"": d}, 2)
    return "no writable cgroup with the memory and pids controllers"


def _try(parents: dict[str, str], version: int) -> tuple[dict[str, str], int] | str:
    try:
        cg = SampleCgroup.create(parents, version, memory_bytes=64 << 20, max_processes=4, tag="probe")
    except OSError as e:
        return f"cannot create a cgroup: {e.strerror or e}"
    cg.close()
    _remove_stale(parents, version)
    return parents, version


def _remove_stale(parents: dict[str, str], version: int) -> None:
    """Groups left by a process that died mid-program (``lmeval-sandbox-PID-N`` whose PID is gone)."""
    names: set[str] = set()
    for parent in parents.values():
        try:
            names.update(n for n in os.listdir(parent) if n.startswith("lmeval-sandbox-"))
        except OSError:
            continue
    for name in names:
        pid = name.split("-")[2]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                SampleCgroup({k: os.path.join(p, name) for k, p in parents.items()}, version, 0, 0).close(wait=2.0)
            except OSError:
                pass


def cgroup_root() -> tuple[dict[str, str], int] | None:
    """(controller -> parent directory, cgroup version) where per-program groups go, or None."""
    with _probe_lock:
        if not _root_cache:
            _root_cache.append(_probe())
    got = _root_cache[0]
    return None if isinstance(got, str) else got


def why_unavailable() -> str:
    cgroup_root()
    got = _root_cache[0]
    return got if isinstance(got, str) else ""


@dataclass
class SampleCgroup:
    dirs: dict[str, str]  # controller ("memory", "pids"; "" for v2) -> this program's group directory
    version: int
    memory_bytes: int
    max_processes: int

    @classmethod
    def create(
        cls, parents: dict[str, str], version: int, *, memory_bytes: int, max_processes: int, tag: str = ""
    ) -> SampleCgroup:
        with _lock:
            n = next(_counter)
        name = f"lmeval-sandbox-{os.getpid()}-{n}{'-' + tag if tag else ''}"
        cg = cls({k: os.path.join(p, name) for k, p in parents.items()}, version, memory_bytes, max_processes)
        try:
            for d in cg.dirs.values():
                os.mkdir(d, 0o755)
            if version == 1:
                mem, pids = cg.dirs["memory"], cg.dirs["pids"]
                _write(os.path.join(mem, "memory.limit_in_bytes"), str(memory_bytes))
                memsw = os.path.join(mem, "memory.memsw.limit_in_bytes")
                if os.path.exists(memsw):  # swap counts too: a program cannot page its way past the cap
                    _write(memsw, str(memory_bytes))
                _write(os.path.join(pids, "pids.max"), str(max_processes))
            else:
                d = cg.dirs[""]
                _write(os.path.join(d, "memory.max"), str(memory_bytes))
                if os.path.exists(os.path.join(d, "memory.swap.max")):
                    _write(os.path.join(d, "memory.swap.max"), "0")
                _write(os.path.join(d, "pids.max"), str(max_processes))
        except OSError:
            cg.close()
            raise
        return cg

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files the program joins (one per hierarchy)."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def _events(self, directory: str, name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        try:
            text = _read(os.path.join(directory, name))
        except OSError:
            return out
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                out[k] = int(v)
        return out

    def cause(self) -> str | None:
        """``memory`` once the kernel OOM-killed a process of the group, ``processes`` once it refused a
        fork at the process cap; else None."""
        if self.version == 1:
            if self._events(self.dirs["memory"], "memory.oom_control").get("oom_kill", 0) > 0:
                return MEMORY
            if self._events(self.dirs["pids"], "pids.events").get("max", 0) > 0:
                return PROCESSES
            return None
        d = self.dirs[""]
        if self._events(d, "memory.events").get("oom_kill", 0) > 0:
            return MEMORY
        if self._events(d, "pids.events").get("max", 0) > 0:
            return PROCESSES
        return None

    def pids(self) -> list[int]:
        out: list[int] = []
        for f in self.procs_files():
            try:
                out += [int(p) for p in _read(f).split()]
            except (OSError, ValueError):
                pass
        return sorted(set(out))

    def kill_all(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self, wait: float = 10.0) -> None:
        """Kill every process left in the group and remove it (retrying while the kernel frees it)."""
        deadline = time.monotonic() + wait
        for d in self.dirs.values():
            while os.path.isdir(d):
                self.kill_all()
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
