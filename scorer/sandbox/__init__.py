"""Run untrusted generated Python in an isolated, resource-limited child process.

Each program gets its own process tree, started through ``scorer/sandbox/launcher.py``:

- **network**: a new, empty network namespace (no interface is up, so even 127.0.0.1 is unreachable).
  When the machine cannot create one, ``run_program`` raises ``SandboxUnavailable`` unless the caller
  passes ``allow_network=True`` (an explicit opt-out).
- **filesystem**: a new mount namespace in which every mount is read-only; every home directory (the
  caller's, ``/root`` and all of ``/home``), ``/tmp``, ``/var/tmp``,
  ``/run`` and ``/dev/shm`` are replaced by empty read-only directories (dotfile tokens and Unix sockets
  such as ssh-agent's stay out of reach); the only writable place is a fresh size-capped tmpfs mounted on
  the program's temporary working directory (also ``HOME`` and ``TMPDIR``). As root the program runs under
  a throwaway uid/gid, so file permissions also apply; as a normal user a user namespace is used and every
  capability is dropped before the program starts.
- **processes**: a new pid namespace whose pid 1 is a small init that starts the program and reaps
  orphans; everything the program starts dies with it, and on a timeout the parent kills the whole
  process group.
- **the whole process tree** (``scorer/sandbox/cgroup.py``): where the machine offers cgroups (root, with
  v1 memory and pids hierarchies or a v2 group with both controllers) each program runs in a fresh cgroup
  capping the memory (``memory_mb``, swap included) and process count (``max_processes``) of everything
  it starts together. The parent watches it: an OOM kill stops the program as ``memory``, a refused fork
  stops it as ``process_limit``; what is left is killed and the group removed after every program.
  Without cgroups the program may not fork at all (``RLIMIT_NPROC`` 1), unless the caller passes
  ``allow_forks_without_cgroup=True`` (an explicit opt-out: per-process limits only).
- **limits**: wall clock (``timeout``), CPU seconds (``RLIMIT_CPU``), address space (``RLIMIT_AS``), file
  size (``RLIMIT_FSIZE``), open files, no core dumps; stdout and stderr are captured up to
  ``max_output_bytes`` each and the program is killed when either exceeds it.
- **environment**: the program sees only ``PATH``, ``HOME``, ``TMPDIR``, ``LANG``/``LC_ALL`` and what
  the caller passes in ``env``; nothing of the parent's environment (API keys, tokens) reaches it, and
  with the fresh ``/proc`` it cannot read other processes' environments either.

Which isolation the machine supports is probed once per process (``sandbox_support``): the strongest
level that works is used, and without a network namespace nothing runs unless ``allow_network=True``
(which permits running without one; it never turns isolation off where it is available). Fallbacks, in
order: no mount/pid namespace (root: throwaway uid, and every process of that uid is killed after the
run), then, only with ``allow_network=True``, no network namespace and finally no namespaces at all.

This module chooses the isolation and is the sandbox's public face; ``scorer.sandbox.run`` runs one
program under it, ``scorer.sandbox.result`` says what the run gave.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lmeval.plans import UserError
from lmeval.scorer.sandbox.cgroup import SampleCgroup, cgroup_root
from lmeval.scorer.sandbox.result import FAILED as FAILED
from lmeval.scorer.sandbox.result import KILLED as KILLED
from lmeval.scorer.sandbox.result import MEMORY as MEMORY
from lmeval.scorer.sandbox.result import OUTPUT_LIMIT as OUTPUT_LIMIT
from lmeval.scorer.sandbox.result import PASSED as PASSED
from lmeval.scorer.sandbox.result import PROCESS_LIMIT as PROCESS_LIMIT
from lmeval.scorer.sandbox.result import SANDBOX_ERROR as SANDBOX_ERROR
from lmeval.scorer.sandbox.result import TIMEOUT as TIMEOUT
from lmeval.scorer.sandbox.result import ExecResult as ExecResult
from lmeval.scorer.sandbox.run import LAUNCHER as LAUNCHER
from lmeval.scorer.sandbox.run import PROGRAM_NAME as PROGRAM_NAME
from lmeval.scorer.sandbox.run import Isolation as Isolation
from lmeval.scorer.sandbox.run import run_isolated as _run  # module global: tests replace it


class SandboxUnavailable(UserError):
    """The machine cannot provide the isolation that was asked for."""


def _python_candidates() -> list[str]:
    env = os.environ.get("LMEVAL_SANDBOX_PYTHON")
    names = [env] if env else []
    names += [sys.executable, "/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
    out: list[str] = []
    for n in names:
        if n and os.path.exists(n) and n not in out:
            out.append(n)
    return out


def _levels(root: bool, allow_network: bool) -> list[tuple[dict[str, bool], bool]]:
    user = not root
    levels = [
        ({"user": user, "net": True, "mount": True, "pid": True}, root),
        ({"user": user, "net": True, "mount": False, "pid": False}, root),
    ]
    if allow_network:
        levels += [
            ({"user": user, "net": False, "mount": True, "pid": True}, root),
            ({"user": False, "net": False, "mount": False, "pid": False}, root),
        ]
    return levels


_support_cache: dict[bool, Isolation | str] = {}
_support_lock = threading.Lock()


def sandbox_support(allow_network: bool = False) -> Isolation:
    """The strongest isolation that works here, probed by running a trivial program (cached).

    Raises ``SandboxUnavailable`` when none does (without ``allow_network``: when no network namespace
    can be created).
    """
    with _support_lock:
        cached = _support_cache.get(allow_network)
        if cached is None:
            cached = _probe(allow_network)
            _support_cache[allow_network] = cached
    if isinstance(cached, str):
        raise SandboxUnavailable(cached)
    return cached


def _probe(allow_network: bool) -> Isolation | str:
    root = os.geteuid() == 0
    notes: list[str] = []
    for namespaces, drop_uid in _levels(root, allow_network):
        for python in _python_candidates():
            hide = tuple(d for d in _hidden_dirs() if not _inside(os.path.realpath(python), d))
            iso = Isolation(namespaces=namespaces, drop_uid=drop_uid, python=python, hide=hide)
            res = _run(iso, "import sys\nsys.stdout.write('ok')\n", 20.0, 256, {})
            if res.status == PASSED and res.stdout == "ok":
                kept = [d for d in _hidden_dirs() if d not in hide]
                if kept and namespaces.get("mount"):
                    notes.append(f"not hidden because the interpreter lives there: {', '.join(kept)}")
                return Isolation(namespaces, drop_uid, python, tuple(notes), hide)
            notes.append(f"{iso.describe()}: {res.reason}")
    if not allow_network:
        return (
            "code sandbox unavailable: cannot run programs without network access on this machine "
            f"({'; '.join(notes[-2:])}); pass allow_network=True to run them anyway"
        )
    return f"code sandbox unavailable: {'; '.join(notes[-2:])}"


def _hidden_dirs() -> list[str]:
    """Every home directory (the caller's, ``/root`` and all of ``/home``) and the shared scratch/runtime
    directories, where tokens, keys and Unix sockets (ssh-agent, docker) live; a sandboxed program sees each
    as an empty read-only dir."""
    dirs = [os.path.expanduser("~"), "/root", "/home", "/tmp", "/var/tmp", "/run", "/dev/shm"]
    try:
        import pwd

        dirs.append(pwd.getpwuid(os.geteuid()).pw_dir)
    except (ImportError, KeyError):
        pass
    out: list[str] = []
    for d in dirs:
        real = os.path.realpath(d) if d else ""
        if real and real != "/" and os.path.isdir(real) and real not in out:
            out.append(real)
    return out


def _inside(path: str, parent: str) -> bool:
    path, parent = os.path.realpath(path), os.path.realpath(parent)
    return os.path.commonpath([path, parent]) == parent


def run_program(
    code: str,
    timeout: float = 10.0,
    memory_mb: int = 1024,
    *,
    cpu_seconds: float | None = None,
    max_processes: int = 64,
    max_output_bytes: int = 1 << 20,
    max_file_mb: int = 16,
    disk_mb: int = 64,
    allow_network: bool = False,
    allow_forks_without_cgroup: bool = False,
    env: Mapping[str, str] | None = None,
) -> ExecResult:
    """Run ``code`` as ``main.py`` in a sandbox; ``passed`` means it exited with status 0.

    ``timeout`` is wall-clock seconds (the process tree is killed after it); ``cpu_seconds`` defaults to
    the same. ``memory_mb`` and ``max_processes`` cap the whole process tree where a cgroup can be made
    (else the program may not fork unless ``allow_forks_without_cgroup``). A program that hits a limit is
    reported with that status, never raised: only a machine that cannot isolate at all raises
    ``SandboxUnavailable``.
    """
    iso = sandbox_support(allow_network)
    root = cgroup_root()
    # with a cgroup its pids cap must be the one that refuses (so the refusal is seen): the rlimit is a spare
    nproc = int(max_processes) + 1 if root is not None else int(max_processes) if allow_forks_without_cgroup else 1
    limits = {
        "cpu": max(1, math.ceil(cpu_seconds if cpu_seconds is not None else timeout)),
        "as": int(memory_mb) << 20,
        "nproc": nproc,
        "fsize": int(max_file_mb) << 20,
        "nofile": 256,
        "core": 0,
    }
    cgroup = None
    if root is not None:
        try:
            cgroup = SampleCgroup.create(*root, memory_bytes=int(memory_mb) << 20, max_processes=int(max_processes))
        except OSError as e:
            return ExecResult(False, SANDBOX_ERROR, f"cannot create the program's cgroup: {e}", "", "")
    return _run(iso, code, timeout, disk_mb, limits, max_output_bytes, env, cgroup=cgroup)


def check_program(program: str, timeout: float = 10.0, **kwargs: Any) -> ExecResult:
    """Run a candidate solution followed by its tests (one string); passed = every test passed (exit 0).

    ``kwargs`` are ``run_program``'s keyword options.
    """
    return run_program(program, timeout, **kwargs)


def check_many(programs: Iterable[str], workers: int = 2, **kwargs: Any) -> list[ExecResult]:
    """``check_program`` over many programs, ``workers`` at a time; results in input order."""
    items = list(programs)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda p: check_program(p, **kwargs), items))
