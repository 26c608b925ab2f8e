"""Engine settings derived from the model and the platform (``executor.engineconf``), for simulated CUDA
platforms and the CPU: the docs' "Models" table, row by row. No engine is started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmeval.executor.engineconf import (
    CPU_BLOCK_SIZE,
    DEFAULT_CPU_KV_CACHE_BYTES,
    ModelFacts,
    Platform,
    UserSettings,
    derive_engine_args,
    max_len_from_config,
    model_facts,
)
from lmeval.executor.errors import ExecuteError

FACTS = ModelFacts(max_model_len=4096, length_key="max_position_embeddings", checkpoint_dtype="bfloat16")
# a fixed stand-in for vLLM's EngineArgs field names, so this module never imports vLLM
KNOWN = frozenset(
    {"model", "tokenizer", "dtype", "max_model_len", "seed", "enforce_eager", "gpu_memory_utilization",
     "kv_cache_memory_bytes", "block_size", "tensor_parallel_size", "enable_prefix_caching", "max_num_seqs",
     "trust_remote_code", "quantization"}
)  # fmt: skip
ENV: dict[str, str] = {}
MPE = "max_position_embeddings"


def cuda(n: int) -> Platform:
    return Platform("cuda", n, tuple(f"NVIDIA H100 80GB HBM3 #{i}" for i in range(n)))


def derive(platform: Platform, **user: object) -> dict[str, object]:
    return derive_engine_args("/m", FACTS, platform, UserSettings(**user), KNOWN, ENV)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 2, 8])
def test_cuda_derives_auto_dtype_graphs_on_and_memory_utilization(n: int) -> None:
    args = derive(cuda(n), seed=0)
    assert args == {
        "model": "/m",
        "tokenizer": "/m",
        "max_model_len": 4096,
        "dtype": "auto",
        "gpu_memory_utilization": 0.9,
        "enable_prefix_caching": True,
        "seed": 0,
    }  # no enforce_eager, no explicit KV size or block size, no tensor parallelism unless asked


@pytest.mark.parametrize("n", [2, 8])
def test_cuda_tensor_parallel_when_asked(n: int) -> None:
    assert derive(cuda(n), tensor_parallel_size=2)["tensor_parallel_size"] == 2
    assert derive(cuda(n), engine={"tensor_parallel_size": 2})["tensor_parallel_size"] == 2


def test_tensor_parallel_beyond_the_devices_is_one_line() -> None:
    with pytest.raises(ExecuteError, match=r"^model.tensor_parallel_size=2: this machine has 1 cuda device\(s\)$"):
        derive(cuda(1), tensor_parallel_size=2)
    with pytest.raises(ExecuteError, match="needs GPUs; this is a CPU"):
        derive(Platform("cpu"), tensor_parallel_size=2)


def test_cpu_derives_float32_eager_and_an_explicit_kv_cache() -> None:
    args = derive(Platform("cpu", 0, ("Intel Xeon",)), seed=0)
    assert args == {
        "model": "/m",
        "tokenizer": "/m",
        "max_model_len": 4096,
        "dtype": "float32",
        "enforce_eager": True,
        "kv_cache_memory_bytes": DEFAULT_CPU_KV_CACHE_BYTES,
        "block_size": CPU_BLOCK_SIZE,
        "enable_prefix_caching": True,
        "seed": 0,
    }


def test_cpu_kv_cache_from_the_environment_is_left_to_vllm() -> None:
    args = derive_engine_args("/m", FACTS, Platform("cpu"), UserSettings(), KNOWN, {"VLLM_CPU_KVCACHE_SPACE": "4"})
    assert "kv_cache_memory_bytes" not in args


def test_user_settings_win_everywhere() -> None:
    for platform in (cuda(8), Platform("cpu")):
        args = derive(
            platform,
            dtype="bfloat16",
            max_model_len=1024,
            engine={"gpu_memory_utilization": 0.5, "kv_cache_memory_bytes": 123, "enforce_eager": False},
        )
        assert args["dtype"] == "bfloat16" and args["max_model_len"] == 1024
        assert args["gpu_memory_utilization"] == 0.5 and args["enforce_eager"] is False
        assert args["kv_cache_memory_bytes"] == 123


def test_unknown_engine_key_is_one_line_naming_it() -> None:
    want = r"^model.engine.max_num_seq: not a vLLM engine argument \(did you mean max_num_seqs\?\)$"
    with pytest.raises(ExecuteError, match=want):
        derive(cuda(1), engine={"max_num_seq": 4})
    with pytest.raises(ExecuteError, match=r"^model.engine.frobnicate: not a vLLM engine argument$"):
        derive(Platform("cpu"), engine={"frobnicate": 1})


def test_trust_remote_code_only_when_the_user_grants_it() -> None:
    assert "trust_remote_code" not in derive(cuda(1))
    assert derive(cuda(1), trust_remote_code=True)["trust_remote_code"] is True


# ---------------------------------------------------------------------------------- context length


@pytest.mark.parametrize(
    ("cfg", "tok", "want"),
    [
        ({"max_position_embeddings": 2048}, None, (2048, "max_position_embeddings")),
        ({"n_positions": 1024}, None, (1024, "n_positions")),  # GPT-2
        ({"max_position_embeddings": 8192, "seq_length": 4096}, None, (4096, "seq_length")),  # smallest wins
        ({"max_position_embeddings": 8192}, {"model_max_length": 4096}, (4096, "tokenizer_config.model_max_length")),
        ({"max_position_embeddings": 8192}, {"model_max_length": 1e30}, (8192, "max_position_embeddings")),
        ({}, None, (2048, None)),  # vLLM's fallback
        ({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 4.0}}, None, (16384, MPE)),
        (
            {"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}},
            None,
            (131072, MPE),
        ),  # fmt: skip
        ({"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, None, (32768, MPE)),
        ({"text_config": {"max_position_embeddings": 8192}, "max_position_embeddings": 99}, None, (8192, MPE)),
    ],
)
def test_context_length_as_vllm_derives_it(cfg: dict, tok: dict | None, want: tuple[int, str | None]) -> None:  # type: ignore[type-arg]
    assert max_len_from_config(cfg, tok) == want


def test_model_facts_read_the_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 2048, "torch_dtype": "bfloat16"}))
    assert model_facts(tmp_path) == ModelFacts(2048, "max_position_embeddings", "bfloat16")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ExecuteError, match="config.json: cannot read the model's config"):
        model_facts(tmp_path)


def test_tiny_model_derives_its_old_fixed_settings_on_cpu(tiny_model: Path) -> None:
    """``model=tiny`` used to pin 16384 / float32 / eager / 1 GiB; on a CPU the derivation gives the same."""
    args = derive_engine_args(str(tiny_model), model_facts(tiny_model), Platform("cpu"), UserSettings(), KNOWN, ENV)
    assert (args["max_model_len"], args["dtype"], args["enforce_eager"], args["kv_cache_memory_bytes"]) == (
        16384,
        "float32",
        True,
        1 << 30,
    )


def test_vllm_argument_errors_become_one_line_naming_the_setting() -> None:
    import pydantic

    from lmeval.executor.backends.vllm_engine import engine_error

    args = {"model": "/m", "max_model_len": 4096, "dtype": "float32", "gpu_memory_utilization": 1.5}
    e = ValueError(
        "Value error, User-specified max_model_len (4096) is greater than the derived max_model_len "
        "(max_position_embeddings=2048 in model's config.json). To allow overriding this maximum, set ..."
    )
    assert engine_error(e, args) == (
        "model.max_model_len=4096: vLLM rejects it (User-specified max_model_len (4096) is greater than the "
        "derived max_model_len (max_position_embeddings=2048 in model's config.json))"
    )

    class Cache(pydantic.BaseModel):
        gpu_memory_utilization: float = pydantic.Field(le=1)

    with pytest.raises(pydantic.ValidationError) as v:
        Cache(gpu_memory_utilization=1.5)
    line = engine_error(v.value, args)
    assert line.startswith("model.engine.gpu_memory_utilization=1.5: vLLM rejects it (") and "\n" not in line
