"""The one key rule of answers: what makes two requests' answers interchangeable (``executor/ANSWERSTORE.md``).

An answer is keyed by the *model context* (``model_context``: everything about the model and the engine that can
change an answer) and the *request part* (``request_part``: the plan's request hash, which covers what the model
sees and the generation kwargs with their seed, plus the repeats asked and, for a sampled generation, the engine's
seed). The result store (``executor/answerstore.py``), the dedup of identical requests inside a plan
(``executor/jobloop.py``) and the estimate's "already answered" count all use these functions and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from lmeval.executor.requests import is_sampled
from lmeval.plans import InstanceRecord

KEY_VERSION = 1  # bumped when what an answer depends on changes meaning (old entries then never match)

# engine settings that change how fast or in what memory an engine runs, never what it answers (beyond the
# last-bit noise that batch composition already brings): left out of the model context so that they do not split
# the store. Anything else the user sets (quantization, kv_cache_dtype, rope scaling, ...) is part of the key.
THROUGHPUT_ENGINE_ARGS = frozenset({
    "gpu_memory_utilization", "kv_cache_memory_bytes", "swap_space", "cpu_offload_gb", "max_num_seqs",
    "max_num_batched_tokens", "enable_prefix_caching", "disable_log_stats", "enable_chunked_prefill",
    "max_concurrency", "concurrency", "timeout", "max_retries", "retries", "batch_size", "api_key",
})  # fmt: skip

# the files that hold a model's weights (their bytes are the weights hash)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".msgpack", ".h5")


def canonical_hash(value: Any) -> str:
    """sha256 of ``value``'s canonical JSON (sorted keys, no spaces): the hash of a key's parts."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(v: Any) -> Any:
    return asdict(v) if is_dataclass(v) and not isinstance(v, type) else v


def weight_files(model_dir: Path) -> list[Path]:
    """The weight files of ``model_dir`` (top level and one level down), sorted by name."""
    found = [p for p in model_dir.glob("*") if p.name.endswith(WEIGHT_SUFFIXES)]
    found += [p for p in model_dir.glob("*/*") if p.name.endswith(WEIGHT_SUFFIXES)]
    return sorted(p for p in found if p.is_file())


def weights_hash(model_dir: Path | None, file_hash: Callable[[Path], str]) -> str | None:
    """sha256 over the weight files' names and sha256s (``file_hash``: a cached file hash), or None without
    a model directory or weight files. A Hugging Face cache snapshot links each file to ``blobs/<sha256>``: that
    name is its hash, read without reading the file."""
    if model_dir is None or not model_dir.is_dir():
        return None
    parts = []
    for p in weight_files(model_dir):
        target = os.path.basename(os.readlink(p)) if p.is_symlink() else ""
        digest = target if len(target) == 64 and all(c in "0123456789abcdef" for c in target) else file_hash(p)
        parts.append(f"{p.relative_to(model_dir).as_posix()}\0{digest}")
    return canonical_hash(parts) if parts else None


def model_context(
    spec: Any, ident: Mapping[str, Any], versions: Mapping[str, str], weights: str | None, server: str | None = None
) -> dict[str, Any]:
    """Everything about the model and the engine that can change an answer: the model's content (weights,
    tokenizer and config hashes; its name and location only when no weights identify it, e.g. an API model),
    the backend and the installed versions of it and lmeval, dtype, context length, BOS and prefix token,
    default generation length, the reasoning split, the token rule and every engine setting that is not
    throughput-only (``THROUGHPUT_ENGINE_ARGS``); for an HTTP backend the server its requests go to (``server``:
    the override's, ``$OPENAI_BASE_URL``'s or the plan's). ``spec``: the run's ``ModelSpec``; ``ident``: its
    ``model_identity``."""
    engine = {k: v for k, v in sorted(spec.engine.items()) if k not in THROUGHPUT_ENGINE_ARGS and k != "base_url"}
    return {
        "key_version": KEY_VERSION,
        "weights_hash": weights,
        "tokenizer_hash": ident.get("tokenizer_hash"),
        "config_hash": ident.get("config_hash"),
        "model": None if weights else {"name": ident.get("name"), "path": ident.get("path")},
        "revision": ident.get("revision"),
        "backend": spec.backend,
        "versions": dict(sorted(versions.items())),
        "dtype": spec.dtype,
        "max_model_len": spec.max_model_len,
        "add_bos_token": spec.add_bos_token,
        "prefix_token_id": spec.prefix_token_id,
        "max_gen_toks": spec.max_gen_toks,
        "reasoning": _plain(spec.reasoning),
        "token_rule": _plain(spec.token_rule),
        "engine": engine,
        "server": server,
    }


def model_key(context: Mapping[str, Any]) -> str:
    """The hash of a model context: the first half of every answer's key."""
    return canonical_hash(dict(context))


def request_part(inst: InstanceRecord, engine_seed: int) -> str:
    """What of one Instance its answer depends on beyond the model: the request hash; for a generation the
    repeats asked; for a sampled generation also the engine's seed (``model.seed``). Two Instances of one plan
    with equal parts are one request (run once)."""
    rh = inst.request_hash or f"instance:{inst.instance_id}"
    if inst.request_type != "generate_until":
        return rh
    part = f"{rh}/n{max(inst.repeats, 1)}"
    if is_sampled(inst.generation_kwargs):
        part += f"/s{engine_seed}"
    return part


def answer_key(mkey: str, inst: InstanceRecord, engine_seed: int) -> str:
    """An Instance's answer key under the model key ``mkey``: sha256 of both halves."""
    return hashlib.sha256(f"{mkey}\0{request_part(inst, engine_seed)}".encode()).hexdigest()
