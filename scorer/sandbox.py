"""Run untrusted generated Python in an isolated, resource-limited child process.

Each program gets its own process tree, started through ``scorer/sandbox_launcher.py``:

- **network**: a new, empty network namespace (no interface is up, so even 127.0.0.1 is unreachable).
  When the machine cannot create one, ``run_program`` raises ``SandboxUnavailable`` unless the caller
  passes ``allow_network=True`` (an explicit opt-out).
- **filesystem**: a new mount namespace in which every mount is read-only; the caller's home, ``/root``,
  ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` are replaced by empty read-only directories (dotfile
  tokens and Unix sockets such as ssh-agent's stay out of reach); the only writable place is a fresh
  size-capped tmpfs mounted on the program's temporary working directory (also ``HOME`` and
  ``TMPDIR``). As root the program runs under a throwaway uid/gid, so file permissions also apply; as a
  normal user a user namespace is used and every capability is dropped before the program starts.
- **processes**: a new pid namespace whose pid 1 is a small init that starts the program and reaps
  orphans; everything the program starts dies with it, and on a timeout the parent kills the whole
  process group.
- **the whole process tree** (``scorer/sandbox_cgroup.py``): where the machine offers cgroups (root, with
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
"""

from __future__ import annotations

import itertools
import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.plans.errors import UserError
from lmeval.scorer.sandbox_cgroup import SampleCgroup, cgroup_root

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
PROGRAM_NAME = "main.py"

# Statuses an ExecResult can carry.
PASSED = "passed"
FAILED = "failed"  # the program ran and exited non-zero (an exception, a failed assert, sys.exit(1))
TIMEOUT = "timeout"  # wall-clock or CPU-time limit
MEMORY = "memory"  # address-space limit (MemoryError or an allocation failure), or the tree's cgroup cap
PROCESS_LIMIT = "process_limit"  # the process tree reached max_processes (a fork was refused)
OUTPUT_LIMIT = "output_limit"  # stdout/stderr over max_output_bytes, or a file over max_file_mb
KILLED = "killed"  # ended by a signal (segfault, abort, ...)
SANDBOX_ERROR = "sandbox_error"  # the sandbox itself could not be set up for this program

_SANDBOX_UID_BASE = 1_500_000_000  # throwaway uids for root mode: far from any real account
_uid_counter = itertools.count()
_uid_lock = threading.Lock()


class SandboxUnavailable(UserError):
    """The machine cannot provide the isolation that was asked for."""


@dataclass(frozen=True)
class ExecResult:
    passed: bool
    status: str
    reason: str
    stdout: str
    stderr: str
    returncode: int | None = None  # exit status; None when ended by a signal or never started
    duration: float = 0.0  # wall-clock seconds


@dataclass(frozen=True)
class Isolation:
    """What the sandbox uses on this machine (see ``sandbox_support``)."""

    namespaces: dict[str, bool] = field(default_factory=dict)  # user, net, mount, pid
    drop_uid: bool = False  # root: run the program under a throwaway uid
    python: str = ""  # interpreter the program runs under
    notes: tuple[str, ...] = ()  # why stronger levels were not available
    hide: tuple[str, ...] = ()  # directories replaced by an empty read-only tmpfs (with a mount namespace)

    @property
    def network_isolated(self) -> bool:
        return bool(self.namespaces.get("net"))

    def describe(self) -> str:
        parts = [k for k in ("user", "net", "mount", "pid") if self.namespaces.get(k)]
        who = "throwaway uid" if self.drop_uid else "caller's uid"
        return f"namespaces={'+'.join(parts) or 'none'}, {who}, python={self.python}"


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


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), for n samples of which c passed."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


# ---------------------------------------------------------------------------------------------------


def _next_uid() -> int:
    with _uid_lock:
        n = next(_uid_counter)
    return _SANDBOX_UID_BASE + ((os.getpid() & 0xFFFFF) << 8) + (n & 0xFF)


def _hidden_dirs() -> list[str]:
    """The caller's home directories and the shared scratch/runtime directories, where tokens, keys and
    Unix sockets (ssh-agent, docker) live; a sandboxed program sees each as an empty read-only dir."""
    dirs = [os.path.expanduser("~"), "/root", "/tmp", "/var/tmp", "/run", "/dev/shm"]
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


def _child_env(workdir: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    env.update(extra or {})
    return env


def _run(
    iso: Isolation,
    code: str,
    timeout: float,
    disk_mb: int,
    limits: dict[str, int],
    max_output_bytes: int = 1 << 20,
    env: Mapping[str, str] | None = None,
    launcher_user: int | None = None,
    cgroup: SampleCgroup | None = None,
) -> ExecResult:
    """Run one program; ``launcher_user`` (tests, as root) starts the launcher as that unprivileged uid.
    With ``cgroup`` the program runs in it and the group is removed afterwards, whatever happens."""
    try:
        return _run_in(iso, code, timeout, disk_mb, limits, max_output_bytes, env, launcher_user, cgroup)
    finally:
        if cgroup is not None:
            cgroup.close()


def _run_in(
    iso: Isolation,
    code: str,
    timeout: float,
    disk_mb: int,
    limits: dict[str, int],
    max_output_bytes: int,
    env: Mapping[str, str] | None,
    launcher_user: int | None,
    cgroup: SampleCgroup | None,
) -> ExecResult:
    workdir = tempfile.mkdtemp(prefix="lmeval-sandbox-")
    status_r, status_w = os.pipe()
    start = time.monotonic()
    try:
        Path(workdir, PROGRAM_NAME).write_text(code, encoding="utf-8")
        launcher = str(LAUNCHER)
        if launcher_user is not None:
            # that user may not be able to read the repo: hand it a copy
            launcher = shutil.copy(LAUNCHER, os.path.join(workdir, "launcher.py"))
            for p in (workdir, os.path.join(workdir, PROGRAM_NAME), launcher):
                os.chown(p, launcher_user, launcher_user)
        uid = _next_uid() if iso.drop_uid else None
        cfg = {
            "workdir": workdir,
            "program_name": PROGRAM_NAME,
            "argv": [iso.python, "-I", "-u", PROGRAM_NAME],
            "env": _child_env(workdir, env),
            "namespaces": iso.namespaces,
            "uid": uid,
            "gid": uid,
            "limits": limits,
            "disk_mb": disk_mb,
            "status_fd": status_w,
            "parent_pid": os.getpid(),
            "hide": list(iso.hide),
            "cgroup_procs": cgroup.procs_files() if cgroup is not None else [],
        }
        # the launcher is stdlib-only; started as another user it needs an interpreter that user can run
        launcher_python = sys.executable if launcher_user is None else iso.python
        proc = subprocess.Popen(
            [launcher_python, "-I", "-S", launcher, json.dumps(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},
            cwd="/",
            pass_fds=(status_w,),
            start_new_session=True,
            user=launcher_user,
            group=launcher_user,
            extra_groups=[] if launcher_user is not None else None,
        )
        os.close(status_w)
        status_w = -1
        out, err, why = _collect(proc, timeout, max_output_bytes, cgroup)
        proc.wait()
        if cgroup is not None:
            if why is None:
                why = cgroup.cause()
            cgroup.kill_all()
        if uid is not None and not iso.namespaces.get("pid"):
            _reap(uid)  # without a pid namespace, processes that left the group may still run
        duration = time.monotonic() - start
        status_line = _read_all(status_r)
        return _classify(status_line, why, out, err, timeout, limits, max_output_bytes, duration)
    finally:
        if status_w >= 0:
            os.close(status_w)
        os.close(status_r)
        shutil.rmtree(workdir, ignore_errors=True)


def _collect(
    proc: subprocess.Popen[bytes], timeout: float, cap: int, cgroup: SampleCgroup | None = None
) -> tuple[bytes, bytes, str | None]:
    """Read stdout/stderr until both close; kill the process group on timeout, when output exceeds cap, or
    when the program's cgroup reports a cap reached (``memory``/``processes``)."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    names = {out_fd: "stdout", err_fd: "stderr"}
    deadline = time.monotonic() + timeout
    why: str | None = None
    with selectors.DefaultSelector() as sel:
        for f in (proc.stdout, proc.stderr):
            sel.register(f, selectors.EVENT_READ)
        exited = False
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timeout"
                break
            events = sel.select(0 if exited else min(left, 0.1))
            if cgroup is not None:
                why = cgroup.cause()
                if why:
                    break
            if not events:
                if exited:
                    break  # the program is done; whoever still holds the pipes is an orphan
                exited = proc.poll() is not None
                continue
            for key, _ in events:
                fd = key.fd
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = bufs[fd]
                buf += chunk
                if len(buf) > cap:
                    del buf[cap:]
                    why = f"output:{names[fd]}"
                    break
            if why:
                break
    if why is None:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            why = "timeout"
    if why is not None:
        _kill_group(proc)
        if cgroup is not None:
            cgroup.kill_all()
    proc.stdout.close()
    proc.stderr.close()
    return bytes(bufs[out_fd]), bytes(bufs[err_fd]), why


def _reap(uid: int) -> None:
    cfg = json.dumps({"reap_uid": uid})
    subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), cfg], env={}, cwd="/", check=False, timeout=30)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        b = os.read(fd, 4096)
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()[:300]
    return ""


def _is_fork_refused(stderr: str) -> bool:
    last = _last_line(stderr)
    return last.startswith("BlockingIOError") or "Resource temporarily unavailable" in last


def _is_memory_error(stderr: str) -> bool:
    last = _last_line(stderr)
    return last.startswith("MemoryError") or "Cannot allocate memory" in last


def _classify(
    status_line: str,
    why: str | None,
    out_b: bytes,
    err_b: bytes,
    timeout: float,
    limits: dict[str, int],
    cap: int,
    duration: float,
) -> ExecResult:
    out = out_b.decode("utf-8", "replace")
    err = err_b.decode("utf-8", "replace")

    def res(status: str, reason: str, rc: int | None = None) -> ExecResult:
        return ExecResult(status == PASSED, status, reason, out, err, rc, duration)

    lines = [ln for ln in status_line.splitlines() if ln.strip()]
    setup = [ln for ln in lines if ln.startswith("setup-error ")]
    if setup:
        return res(SANDBOX_ERROR, f"sandbox setup failed: {setup[0][len('setup-error ') :]}")
    if why == "timeout":
        return res(TIMEOUT, f"timed out after {timeout:g} s (wall clock)")
    if why is not None and why.startswith("output:"):
        return res(OUTPUT_LIMIT, f"{why.split(':', 1)[1]} exceeded {cap} bytes; process killed")
    if why == "memory":
        return res(MEMORY, f"memory limit of {limits.get('as', 0) >> 20} MB exceeded by the process tree; stopped")
    if why == "processes":
        n_max = limits.get("nproc", 1) - 1
        return res(PROCESS_LIMIT, f"process limit of {n_max} reached (a fork was refused); stopped")
    if not lines:
        return res(SANDBOX_ERROR, f"sandbox launcher failed: {_last_line(err) or 'no status'}")
    kind, _, value = lines[-1].partition(" ")
    num = int(value)
    if kind == "signal":
        if num in (signal.SIGXCPU, signal.SIGKILL) and limits and duration >= limits.get("cpu", 0) * 0.5:
            return res(TIMEOUT, f"CPU time limit of {limits['cpu']} s exceeded (signal {num})")
        if num == signal.SIGXFSZ:
            return res(OUTPUT_LIMIT, "file size limit exceeded")
        if _is_memory_error(err):
            return res(MEMORY, f"memory limit of {limits.get('as', 0) >> 20} MB exceeded")
        return res(KILLED, f"killed by signal {signal.Signals(num).name}")
    if num == 0:
        return res(PASSED, "exit status 0", 0)
    if _is_memory_error(err):
        mb = limits.get("as", 0) >> 20
        return res(MEMORY, f"memory limit of {mb} MB exceeded ({_last_line(err)})", num)
    if limits.get("nproc") == 1 and _is_fork_refused(err):
        return res(PROCESS_LIMIT, "the program may not fork here (no cgroup for its process tree)", num)
    if "File too large" in _last_line(err):
        return res(OUTPUT_LIMIT, f"file size limit exceeded ({_last_line(err)})", num)
    return res(FAILED, _last_line(err) or f"exit status {num}", num)
