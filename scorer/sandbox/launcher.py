"""The sandbox's first process: isolates itself, then runs the untrusted program as its child.

Run by ``scorer.sandbox`` as ``python -I -S launcher.py CONFIG_JSON`` with an empty environment, in
its own session (so the parent can kill the whole process group). Standard library only: it must not import
lmeval. Steps:

1. ``unshare`` the requested namespaces (user when not root, network, mount, pid) in one call.
2. In the new mount namespace: make every mount private and remount each writable one read-only; mount
   an empty read-only tmpfs over each directory to hide (home, /tmp, /run, ...), and a size-capped tmpfs
   on the work directory (the only writable place); write the program into it.
3. ``fork``: with a pid namespace the child is its pid 1 (a small init that mounts a fresh ``/proc``,
   so the host's processes and their environments stay invisible, forks the program and reaps
   orphans); when it exits, or the parent kills this process group, the kernel kills everything the
   program started.
4. In the program's process: join the program's cgroups (``cgroup_procs``, opened before the filesystem
   turned read-only; the launcher and init stay outside, so only the program's own tree counts), set the
   resource limits, drop privileges (root: a throwaway uid; user
   namespace: every capability), ``chdir`` to the work directory and ``execve`` the interpreter with the
   given clean environment.

The outcome goes to the status pipe as one line: ``exit N``, ``signal N`` or ``setup-error MESSAGE``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21

# statvfs f_flag bits -> mount flags; a bind remount must repeat the locked ones or it fails with EPERM
_STATVFS_TO_MS = {
    1: MS_RDONLY,
    2: MS_NOSUID,
    4: MS_NODEV,
    8: MS_NOEXEC,
    1024: MS_NOATIME,
    2048: MS_NODIRATIME,
    4096: MS_RELATIME,
}

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    pass


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int, what: str) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), what)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    ret = _libc.mount(
        None if source is None else source.encode(),
        target.encode(),
        None if fstype is None else fstype.encode(),
        ctypes.c_ulong(flags),
        None if data is None else data.encode(),
    )
    _check(ret, f"mount {target}")


def _mount_points() -> list[str]:
    points: list[str] = []
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            raw = line.split(" ")[4]
            # mountinfo escapes space, tab, newline and backslash as \ooo
            point = raw.encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
            if point not in points:
                points.append(point)
    return points


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _enter_namespaces(cfg: dict[str, Any]) -> None:
    ns = cfg["namespaces"]
    flags = 0
    if ns.get("user"):
        flags |= CLONE_NEWUSER
    if ns.get("net"):
        flags |= CLONE_NEWNET
    if ns.get("mount"):
        flags |= CLONE_NEWNS
    if ns.get("pid"):
        flags |= CLONE_NEWPID
    if not flags:
        return
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")
    if ns.get("user"):
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")


def _isolate_filesystem(cfg: dict[str, Any], program: bytes) -> None:
    workdir = cfg["workdir"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    for point in _mount_points():
        try:
            st = os.statvfs(point)
        except OSError:
            continue  # hidden under another mount
        flags = 0
        for bit, ms in _STATVFS_TO_MS.items():
            if st.f_flag & bit:
                flags |= ms
        if flags & MS_RDONLY:
            continue
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, None)
    for hidden in cfg.get("hide", []):
        # an empty read-only tmpfs over it: tokens in dotfiles and Unix sockets there become unreachable
        if not os.path.isdir(hidden):
            continue
        _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=1m,mode=0755")
        if _contains(hidden, workdir):
            os.makedirs(workdir, mode=0o755)  # the mount point for the work dir's own tmpfs
        _mount(None, hidden, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    owner = cfg.get("uid")
    opts = f"size={int(cfg['disk_mb'])}m,mode=0700"
    if owner is not None:
        opts += f",uid={owner},gid={cfg['gid']}"
    _mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    _write_program(cfg, program)


def _contains(parent: str, path: str) -> bool:
    return os.path.commonpath([parent, path]) == parent


def _write_program(cfg: dict[str, Any], program: bytes) -> None:
    path = os.path.join(cfg["workdir"], cfg["program_name"])
    with open(path, "wb") as f:
        f.write(program)
    if cfg.get("uid") is not None:
        os.chown(path, cfg["uid"], cfg["gid"])


def _drop_capabilities() -> None:
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "clear ambient capabilities")
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) == 0:
        cap += 1
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("CapInh:", "CapBnd:")) and int(line.split()[1], 16) != 0:
                raise SetupError(f"could not drop capabilities ({line.strip()})")


def _set_limits(limits: dict[str, int]) -> None:
    table = {
        "cpu": resource.RLIMIT_CPU,
        "as": resource.RLIMIT_AS,
        "nproc": resource.RLIMIT_NPROC,
        "fsize": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
        "core": resource.RLIMIT_CORE,
    }
    for name, value in limits.items():
        soft = hard = int(value)
        if name == "cpu":
            hard = soft + 1  # SIGXCPU at soft, SIGKILL at hard
        resource.setrlimit(table[name], (soft, hard))


def _exec_program(cfg: dict[str, Any], status_fd: int) -> None:
    ns = cfg["namespaces"]
    for fd in cfg.get("cgroup_fds", []):
        os.write(fd, b"0")  # "0": the writing process; its children inherit the group
    _set_limits(cfg["limits"])
    uid = cfg.get("uid")
    if uid is not None:
        os.setgroups([])
        os.setgid(cfg["gid"])
        os.setuid(uid)
    elif ns.get("user"):
        _drop_capabilities()
    _prctl(PR_SET_NO_NEW_PRIVS, 1, "no_new_privs")
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "pdeathsig")
    os.chdir(cfg["workdir"])
    os.set_inheritable(status_fd, False)  # closed by a successful exec; open to report a failed one
    argv = cfg["argv"]
    os.execve(argv[0], argv, cfg["env"])


def _report(status_fd: int, line: str) -> None:
    try:
        os.write(status_fd, (line.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def reap(uid: int) -> int:
    """Kill every process of a throwaway uid (the fallback without a pid namespace, run as root)."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    for _ in range(1000):
        try:
            os.kill(-1, signal.SIGKILL)  # every process this uid may signal, except this one
        except ProcessLookupError:
            return 0
    return 1


def main() -> int:
    cfg = json.loads(sys.argv[1])
    if "reap_uid" in cfg:
        return reap(int(cfg["reap_uid"]))
    status_fd = int(cfg["status_fd"])
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "pdeathsig")
        if os.getppid() != cfg["parent_pid"]:
            return 1  # the parent died before we could ask to die with it
        program_path = os.path.join(cfg["workdir"], cfg["program_name"])
        with open(program_path, "rb") as f:
            program = f.read()
        # open now: after the mount namespace is set up, /sys/fs/cgroup is read-only (exec closes them)
        cfg["cgroup_fds"] = [os.open(p, os.O_WRONLY | os.O_CLOEXEC) for p in cfg.get("cgroup_procs", [])]
        _enter_namespaces(cfg)
        if cfg["namespaces"].get("mount"):
            _isolate_filesystem(cfg, program)
        elif cfg.get("uid") is not None:
            os.chown(cfg["workdir"], cfg["uid"], cfg["gid"])
            os.chown(program_path, cfg["uid"], cfg["gid"])
    except (OSError, SetupError) as e:
        _report(status_fd, f"setup-error {e}")
        return 1
    pid = os.fork()
    if pid == 0:
        if cfg["namespaces"].get("pid"):
            _init(cfg, status_fd)
        _run_program(cfg, status_fd)
    _, status = os.waitpid(pid, 0)
    if not cfg["namespaces"].get("pid"):
        _report(status_fd, _describe(status))
    elif os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0:
        _report(status_fd, f"setup-error init ended with {_describe(status)}")
    return 0


def _run_program(cfg: dict[str, Any], status_fd: int) -> None:
    try:
        _exec_program(cfg, status_fd)
    except BaseException as e:  # noqa: BLE001 - anything before exec is a setup failure
        _report(status_fd, f"setup-error {type(e).__name__}: {e}")
    os._exit(127)


def _init(cfg: dict[str, Any], status_fd: int) -> None:
    """pid 1 of the new pid namespace: start the program, reap orphans, report the program's end.

    The program is not pid 1 itself because pid 1 ignores signals it has no handler for (its own
    SIGSEGV from os.kill, SIGXCPU at the CPU limit), which would change how programs behave.
    """
    try:
        if cfg["namespaces"].get("mount"):
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, None)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "pdeathsig")
        child = os.fork()
    except BaseException as e:  # noqa: BLE001
        _report(status_fd, f"setup-error {type(e).__name__}: {e}")
        os._exit(1)
    if child == 0:
        _run_program(cfg, status_fd)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            _report(status_fd, _describe(status))
            os._exit(0)  # the kernel now kills whatever the program left behind


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}"


if __name__ == "__main__":
    sys.exit(main())
