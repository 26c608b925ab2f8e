"""Running one program in the sandbox: the launcher process (``scorer/sandbox/launcher.py``) with the
isolation, limits and environment it is given, its output collected under caps, the process tree killed
and its cgroup removed afterwards, and the outcome classified (``scorer.sandbox.result``). Which isolation
to ask for is ``scorer.sandbox``'s job."""

from __future__ import annotations

import itertools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lmeval.scorer.sandbox.cgroup import SampleCgroup
from lmeval.scorer.sandbox.result import ExecResult, classify

LAUNCHER = Path(__file__).with_name("launcher.py")
PROGRAM_NAME = "main.py"

SANDBOX_UID_BASE = 1_500_000_000  # throwaway uids for root mode: far from any real account
_uid_counter = itertools.count()
_uid_lock = threading.Lock()


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


def _next_uid() -> int:
    with _uid_lock:
        n = next(_uid_counter)
    return SANDBOX_UID_BASE + ((os.getpid() & 0xFFFFF) << 8) + (n & 0xFF)


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


def run_isolated(
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
        return classify(status_line, why, out, err, timeout, limits, max_output_bytes, duration)
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
