"""The two conversion steps of a GGUF checkpoint into a Hugging Face folder, done by transformers (and PyPI's
``gguf`` package): ``write_tokenizer_and_config`` (what compiling needs: ``tokenizer.json``,
``tokenizer_config.json``, ``chat_template.jinja``, ``config.json``; seconds) and ``write_weights`` (the
dequantized float32 ``model.safetensors`` and ``generation_config.json``; about a minute for a 135M model on
2 cores). ``common.gguf`` calls them into a temporary folder and owns the caching.

transformers reads GGUF metadata through modules that import torch, so both steps need torch installed
(``pip install 'lmeval[hf]'``); a plan compiled once from a GGUF file reads the cached folder after that.
Every transformers and torch import here is inside a function.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

from lmeval.common.errors import InputError

WEIGHT_FILES = ("model.safetensors", "generation_config.json")


class GGUFConvertError(InputError):
    """A GGUF file transformers cannot convert (its architecture, a missing package): one line."""


def _explain(gguf: Path, arch: str, e: BaseException) -> GGUFConvertError:
    from importlib.metadata import version

    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, ImportError):
        return GGUFConvertError(
            f"{gguf}: converting a GGUF file needs torch and gguf (pip install 'lmeval[hf]'): {text}"
        )
    if "architecture" in text or isinstance(e, NotImplementedError | KeyError):
        return GGUFConvertError(
            f"{gguf}: GGUF architecture '{arch}' cannot be converted by transformers {version('transformers')} "
            f"({type(e).__name__}: {text[:200]})"
        )
    return GGUFConvertError(f"{gguf}: transformers cannot convert this GGUF file ({type(e).__name__}: {text[:200]})")


def _quiet() -> None:
    """No warnings or progress bars from transformers: ``common.gguf`` prints one line per step."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging

        logging.set_verbosity_error()
        logging.disable_progress_bar()
    except ImportError:
        pass


def write_tokenizer_and_config(gguf: Path, arch: str, out: Path) -> None:
    """The tokenizer files and ``config.json`` of ``gguf`` into ``out`` (no weights)."""
    _quiet()
    try:
        from transformers import AutoConfig, AutoTokenizer
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
        cfg = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - ValueError (architecture), ImportError (torch, gguf), ...
        raise _explain(gguf, arch, e) from None
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config  # the saved folder is plain float32
    causal = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(cfg.model_type)
    if not causal:
        raise GGUFConvertError(f"{gguf}: GGUF architecture '{arch}' ({cfg.model_type}) is not a causal language model")
    cfg.architectures = [causal]  # what vLLM and AutoModelForCausalLM read; GGUF metadata does not say it
    cfg.dtype = "float32"  # write_weights dequantizes to float32
    tok.save_pretrained(str(out))
    cfg.save_pretrained(str(out))
    _clean_tokenizer_config(out / "tokenizer_config.json")


def _clean_tokenizer_config(path: Path) -> None:
    # the loading call's own arguments, not facts of the tokenizer
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for key in ("is_local", "local_files_only", "gguf_file", "name_or_path"):
        data.pop(key, None)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def write_weights(gguf: Path, arch: str, out: Path) -> None:
    """``model.safetensors`` (float32, dequantized) and ``generation_config.json`` of ``gguf`` into ``out``;
    the folder's ``config.json`` (``write_tokenizer_and_config``'s) is kept."""
    _quiet()
    try:
        import torch
        from transformers import AutoModelForCausalLM

        with contextlib.redirect_stderr(io.StringIO()):  # transformers' own tqdm bars
            model = AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
            )
    except Exception as e:  # noqa: BLE001
        raise _explain(gguf, arch, e) from None
    # save_pretrained refuses a GGUF-quantized model; its tensors are already dequantized float32
    m: Any = model
    m.hf_quantizer = None
    if hasattr(m.config, "quantization_config"):
        del m.config.quantization_config
    m.is_quantized = False
    staging = out / ".weights"
    with contextlib.redirect_stderr(io.StringIO()):
        model.save_pretrained(str(staging))
    del model
    for name in os.listdir(staging):
        if name.endswith((".safetensors", ".safetensors.index.json")) or name == "generation_config.json":
            os.replace(staging / name, out / name)
    shutil.rmtree(staging)
