"""How many sequences the ``hf`` backend runs per forward when ``model.batch_size`` is unset or ``auto``.

lm-eval's ``--batch_size auto`` halves a trial batch at the longest length until it fits; here the same
question is answered from arithmetic, once per phase, from the memory the machine has free and the model's
dimensions (``docs/how-to/hf-backend.md``, "Batch size"):

    per_sequence(L) = L * dtype_bytes * (4*hidden + 2*kv_dim + 3*intermediate)   activations of one layer
                    + L * 2 * layers * kv_dim * dtype_bytes                         keys and values
                    + L * heads * L * 4                                             attention weights (float32)
                    + L * vocab * 4 * 2                                             logits and log-softmax
    batch_size = clamp(floor(FRACTION * free_bytes / per_sequence(longest)), 1, MAX_AUTO)

``longest`` is the phase's longest forward (scoring) or prompt plus ``max_tokens`` (generation); ``free_bytes``
is ``MemAvailable`` of ``/proc/meminfo`` on the CPU (the model's weights are already loaded by then).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

FRACTION = 0.5  # of the free memory a phase's batches may take
MAX_AUTO = 64  # lm-eval's max_batch_size default
_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class ModelDims:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_dim: int  # key/value heads x head dim
    vocab: int
    dtype_bytes: int


def model_dims(config: Any, dtype_name: str) -> ModelDims:
    """The dimensions ``per_sequence`` reads, from a transformers config (text part)."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0) or 1024)
    heads = int(getattr(cfg, "num_attention_heads", 0) or getattr(cfg, "n_head", 0) or 16)
    head_dim = int(getattr(cfg, "head_dim", 0) or hidden // heads)
    kv_heads = int(getattr(cfg, "num_key_value_heads", 0) or heads)
    return ModelDims(
        hidden=hidden,
        intermediate=int(getattr(cfg, "intermediate_size", 0) or 4 * hidden),
        layers=int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0) or 1),
        heads=heads,
        kv_dim=kv_heads * head_dim,
        vocab=int(getattr(cfg, "vocab_size", 0) or 32000),
        dtype_bytes=_DTYPE_BYTES.get(dtype_name, 4),
    )


def per_sequence(d: ModelDims, length: int) -> int:
    """Bytes one sequence of ``length`` tokens takes in a forward (the module docstring's formula)."""
    act = length * d.dtype_bytes * (4 * d.hidden + 2 * d.kv_dim + 3 * d.intermediate)
    kv = length * 2 * d.layers * d.kv_dim * d.dtype_bytes
    attn = length * d.heads * length * 4
    logits = length * d.vocab * 4 * 2
    return act + kv + attn + logits


def auto_batch_size(d: ModelDims, longest: int, free_bytes: int) -> int:
    return max(1, min(MAX_AUTO, int(FRACTION * free_bytes) // max(1, per_sequence(d, max(1, longest)))))


def free_memory() -> int:
    """``MemAvailable`` in bytes (Linux), else the free physical pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 4 << 30
