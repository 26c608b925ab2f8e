"""The machine line every benchmark writes beside its figures."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")


def cpu_flags() -> str:
    """The SIMD flags that pick vLLM's and torch's CPU kernel paths (``avx2 fma avx512f ...``), as /proc/cpuinfo
    lists them ("unknown" where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    return " ".join(f for f in SIMD_FLAGS if f in flags) or "none of " + " ".join(SIMD_FLAGS)
