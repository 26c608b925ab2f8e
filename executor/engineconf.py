"""Engine settings derived from the model and the platform, unless the user set them.

``derive_engine_args`` is pure: the model's facts (from its ``config.json``), the platform's facts (device
kind and count) and the user's settings in, vLLM engine arguments out, so it is tested for any platform on
any machine. ``model_facts`` and ``detect_platform`` gather the facts; they are the only parts that read
files or ask torch.

What is derived (the "Models" table of docs/how-to/own-model.md says the same):

=====================  =========================================  ==========================================
setting                GPU (CUDA, ROCm, ...)                      CPU
=====================  =========================================  ==========================================
max_model_len          the model's config (as vLLM derives it)    the same
dtype                  ``auto`` (the checkpoint's dtype)          ``float32``
enforce_eager          not set (CUDA graphs on)                   ``true``
KV cache               ``gpu_memory_utilization`` 0.9             ``kv_cache_memory_bytes`` 1 GiB, block 32
tensor_parallel_size   1, or what is asked (at most the devices)  1 (more is an error)
=====================  =========================================  ==========================================
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmeval.executor.errors import ExecuteError
from lmeval.executor.hardware import cpu_model

DEFAULT_MAX_LEN = 2048  # vLLM's and lm-eval's fallback when the config names no length
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
DEFAULT_CPU_KV_CACHE_BYTES = 1 << 30
CPU_BLOCK_SIZE = 32

# the keys vLLM reads the context length from (the smallest present wins), and tokenizer_config's
# model_max_length on top
_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose max_position_embeddings is already the scaled length
_PRESCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")

# engine arguments that name code to import: never taken from a plan, only from the executing user
CODE_LOADING_ARGS = frozenset({"trust_remote_code", "worker_cls", "worker_extension_cls", "logits_processors"})


@dataclass(frozen=True)
class Platform:
    """The facts about the machine the derivation needs."""

    kind: str  # "cuda", "rocm", "xpu", "tpu", "cpu", ...
    device_count: int = 0  # accelerators visible (0 on a CPU)
    device_names: tuple[str, ...] = ()

    @property
    def is_gpu(self) -> bool:
        return self.kind != "cpu" and self.device_count > 0

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "device_count": self.device_count, "device_names": list(self.device_names)}


@dataclass(frozen=True)
class ModelFacts:
    max_model_len: int  # what vLLM derives from config.json (and tokenizer_config.json)
    length_key: str | None  # the config key it came from (None: the 2048 fallback)
    checkpoint_dtype: str | None  # config.json's torch_dtype / dtype


@dataclass(frozen=True)
class UserSettings:
    """What the user set (None: derive it)."""

    dtype: str | None = None  # "auto" counts as unset
    max_model_len: int | None = None
    tensor_parallel_size: int | None = None
    engine: Mapping[str, Any] | None = None  # model.engine: passed through last
    seed: int | None = None
    trust_remote_code: bool = False
    seeded_sampling: bool = False  # the run samples with per-request seeds (repeats, self-consistency)


# -------------------------------------------------------------------------------------- model facts


def _text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = cfg.get("text_config")
    return inner if isinstance(inner, Mapping) else cfg


def _rope_factor(cfg: Mapping[str, Any]) -> float:
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(rope, Mapping) or "gemma3" in str(cfg.get("model_type", "")):
        return 1.0
    params = [rope] if ("rope_type" in rope or "type" in rope) else [v for v in rope.values() if isinstance(v, Mapping)]
    factor = 1.0
    for rp in params:
        kind = rp.get("rope_type") or rp.get("type") or "default"
        if kind not in _PRESCALED_ROPE and kind != "default" and rp.get("factor") is not None:
            factor = float(rp["factor"])
    return factor


def max_len_from_config(
    cfg: Mapping[str, Any], tokenizer_cfg: Mapping[str, Any] | None = None
) -> tuple[int, str | None]:
    """The context length vLLM derives from a model's ``config.json`` (the smallest of its length keys,
    capped by tokenizer_config's ``model_max_length``, times a RoPE scaling factor), and the key it came from."""
    text = _text_config(cfg)
    best: float = float("inf")
    key: str | None = None
    for k in _LENGTH_KEYS:
        v = text.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool) and v < best:
            best, key = v, k
    if tokenizer_cfg:
        v = tokenizer_cfg.get("model_max_length")
        if isinstance(v, int | float) and not isinstance(v, bool) and v < best:
            best, key = v, "tokenizer_config.model_max_length"
    if best == float("inf"):
        best, key = DEFAULT_MAX_LEN, None
    return int(best * _rope_factor(text)), key


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ExecuteError(f"{path}: cannot read the model's config ({e})") from None
    if not isinstance(data, dict):
        raise ExecuteError(f"{path}: the model's config is not a JSON object")
    return data


def model_facts(model_dir: Path) -> ModelFacts:
    cfg = _read_json(model_dir / "config.json")
    tok_cfg = _read_json(model_dir / "tokenizer_config.json")
    length, key = max_len_from_config(cfg, tok_cfg)
    text = _text_config(cfg)
    dtype = text.get("torch_dtype") or text.get("dtype") or cfg.get("torch_dtype") or cfg.get("dtype")
    return ModelFacts(max_model_len=length, length_key=key, checkpoint_dtype=str(dtype) if dtype else None)


# ----------------------------------------------------------------------------------- the derivation


def check_engine_keys(engine: Mapping[str, Any], known: Collection[str] | None) -> None:
    """A one-line error naming the first ``model.engine`` key that is not a vLLM engine argument."""
    if known is None:
        return
    for key in engine:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ExecuteError(f"model.engine.{key}: not a vLLM engine argument{hint}")


def derive_engine_args(
    model: str,
    facts: ModelFacts,
    platform: Platform,
    user: UserSettings,
    known_keys: Collection[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """vLLM engine arguments for ``model`` (a directory) on ``platform``: the user's settings where given,
    derived ones elsewhere, ``user.engine`` passed through last (its keys checked against ``known_keys``)."""
    engine = dict(user.engine or {})
    check_engine_keys(engine, known_keys)
    env = os.environ if env is None else env
    tp = user.tensor_parallel_size if user.tensor_parallel_size is not None else engine.get("tensor_parallel_size")
    args: dict[str, Any] = {
        "model": model,
        "tokenizer": model,
        "max_model_len": user.max_model_len if user.max_model_len is not None else facts.max_model_len,
        "enable_prefix_caching": True,
    }
    if user.seed is not None:
        args["seed"] = user.seed
    if user.trust_remote_code:
        args["trust_remote_code"] = True
    dtype = user.dtype if user.dtype not in (None, "", "auto") else None
    if platform.is_gpu:
        args["dtype"] = dtype or "auto"
        args["gpu_memory_utilization"] = DEFAULT_GPU_MEMORY_UTILIZATION
        if tp is not None:
            tp = int(tp)
            if tp < 1 or tp > platform.device_count:
                raise ExecuteError(
                    f"model.tensor_parallel_size={tp}: this machine has {platform.device_count} "
                    f"{platform.kind} device(s)"
                )
            args["tensor_parallel_size"] = tp
    else:
        # vLLM's CPU backend has no float16 and bfloat16 only on some CPUs; float32 also keeps scores
        # comparable with the hf backend's
        args["dtype"] = dtype or "float32"
        args["enforce_eager"] = True
        if "kv_cache_memory_bytes" not in engine and not env.get("VLLM_CPU_KVCACHE_SPACE"):
            args["kv_cache_memory_bytes"] = DEFAULT_CPU_KV_CACHE_BYTES
        # 32-token blocks (the CPU attention's smallest) instead of 128, so that contexts shorter than 128
        # tokens (0-shot multiple choice) are shared through the prefix cache as well
        args["block_size"] = CPU_BLOCK_SIZE
        if user.seeded_sampling:
            # vLLM rewinds a request's seeded generator after each partial prefill, which CPU generators
            # cannot do ("CPU Generator does not use offset"); chunked prefill off costs scoring speed
            # (measured 4x slower on arc_easy), so only runs that sample get it
            args["enable_chunked_prefill"] = False
        if tp is not None and int(tp) != 1:
            raise ExecuteError(f"model.tensor_parallel_size={tp}: tensor parallelism needs GPUs; this is a CPU")
    args.update(engine)
    if tp is not None and "tensor_parallel_size" not in engine and platform.is_gpu:
        args["tensor_parallel_size"] = int(tp)
    return {k: v for k, v in args.items() if v is not None}


# ------------------------------------------------------------------------------------ platform facts


def detect_platform(use_vllm: bool = True) -> Platform:
    """The platform vLLM (or, for the hf backend, torch) will run on."""
    if use_vllm:
        from vllm.platforms import current_platform

        if current_platform.is_cpu():
            return Platform("cpu", 0, (cpu_model(),))
        kind = str(getattr(current_platform, "device_name", None) or current_platform.device_type or "gpu")
        n = _device_count()
        names = tuple(str(current_platform.get_device_name(i)) for i in range(n))
        return Platform(kind, n, names)
    import torch

    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        return Platform("cuda", n, tuple(torch.cuda.get_device_name(i) for i in range(n)))
    return Platform("cpu", 0, (cpu_model(),))


def _device_count() -> int:
    import torch

    for mod in ("cuda", "xpu"):
        m = getattr(torch, mod, None)
        if m is not None and m.is_available():
            return int(m.device_count())
    return 1


def vllm_engine_keys() -> frozenset[str]:
    """The names vLLM's ``EngineArgs`` takes (what ``model.engine.KEY`` may be)."""
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    return frozenset(f.name for f in dataclasses.fields(EngineArgs))
