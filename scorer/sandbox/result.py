"""What running one sandboxed program gave: its status, and how the launcher's report, the parent's reason
for stopping it and its stderr map to one (``classify``)."""

from __future__ import annotations

import signal
from dataclasses import dataclass

# Statuses an ExecResult can carry.
PASSED = "passed"
FAILED = "failed"  # the program ran and exited non-zero (an exception, a failed assert, sys.exit(1))
TIMEOUT = "timeout"  # wall-clock or CPU-time limit
MEMORY = "memory"  # address-space limit (MemoryError or an allocation failure), or the tree's cgroup cap
PROCESS_LIMIT = "process_limit"  # the process tree reached max_processes (a fork was refused)
OUTPUT_LIMIT = "output_limit"  # stdout/stderr over max_output_bytes, or a file over max_file_mb
KILLED = "killed"  # ended by a signal (segfault, abort, ...)
SANDBOX_ERROR = "sandbox_error"  # the sandbox itself could not be set up for this program


@dataclass(frozen=True)
class ExecResult:
    passed: bool
    status: str
    reason: str
    stdout: str
    stderr: str
    returncode: int | None = None  # exit status; None when ended by a signal or never started
    duration: float = 0.0  # wall-clock seconds


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


def classify(
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
