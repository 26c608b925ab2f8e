"""Quiet runs: what the engine and its libraries print goes to a log file, the terminal keeps lmeval's own.

vLLM, torch and transformers write their warnings and info lines to the process's stdout and stderr, from
Python (logging, warnings, print) and from C++ alike. ``engine_output`` points file descriptors 1 and 2 at
``engine.log`` in the results directory while the engine loads and runs, and hands back a stream on the
real terminal for lmeval's progress bar. With ``verbose`` nothing is redirected: the engine's output shows
on the terminal and no log file is written.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

ENGINE_LOG = "engine.log"


@contextlib.contextmanager
def engine_output(log_path: Path, verbose: bool) -> Iterator[IO[str]]:
    """While open, fds 1 and 2 write to ``log_path`` (appended) unless ``verbose``; yields the terminal."""
    if verbose:
        yield sys.stderr
        return
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()  # type: ignore[union-attr]
    out_fd, err_fd = 1, 2  # the process's own, whatever sys.stdout/sys.stderr are (C++ writes here too)
    try:
        saved_out, saved_err = os.dup(out_fd), os.dup(err_fd)
    except OSError:  # closed descriptors: nothing to redirect
        yield sys.stderr
        return
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        on_fd2 = sys.stderr.fileno() == err_fd
    except (OSError, ValueError, AttributeError):
        on_fd2 = False
    # lmeval's own stream: the real terminal when sys.stderr is fd 2, else whatever sys.stderr was made to be
    terminal: IO[str] = (
        os.fdopen(os.dup(saved_err), "w", buffering=1, encoding="utf-8", errors="replace") if on_fd2 else sys.stderr
    )
    try:
        os.dup2(log_fd, out_fd)
        os.dup2(log_fd, err_fd)
        yield terminal
    finally:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()  # type: ignore[union-attr]
        os.dup2(saved_out, out_fd)
        os.dup2(saved_err, err_fd)
        for fd in (saved_out, saved_err, log_fd):
            os.close(fd)
        if on_fd2:
            terminal.close()
