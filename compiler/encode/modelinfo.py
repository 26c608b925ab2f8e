"""The model a plan is compiled for: its tokenizer (for token ids and the chat template) and the
``ModelInfo`` the header records (name, Hub id, tokenizer identity and hash, token rule, chat template
hash; never a machine path)."""

from __future__ import annotations

import dataclasses
from typing import Any

from lmeval.common import ModelRef, ModelRefError, model_name, processor_hash, resolve_model, text_sha256
from lmeval.compiler.build import ChatFn
from lmeval.compiler.encode.tokenizer import ModelTokenizer
from lmeval.compiler.errors import CompileError, fail
from lmeval.plans import ModelInfo


def load_model_info(
    model_cfg: dict[str, Any] | None, apply_chat_template: bool, chat_kwargs: dict[str, Any] | None = None
) -> tuple[ModelTokenizer | None, ModelInfo, ChatFn | None]:
    """The tokenizer (None without a model), the header's ``ModelInfo`` and, with
    ``run.apply_chat_template``, the chat template function (given ``run.chat_template_kwargs``, e.g.
    ``enable_thinking: false``, as the template's variables; the plan's config records them)."""
    tok, model = load_tokenizer(model_cfg, need_chat=apply_chat_template)
    if not apply_chat_template:
        return tok, model, None
    if tok is None or tok.chat_template is None:
        raise fail(
            "run.apply_chat_template=true but the model's tokenizer has no chat template",
            field="run.apply_chat_template",
        )
    info = dataclasses.replace(model, chat_template_hash=text_sha256(tok.chat_template))
    if not chat_kwargs:
        return tok, info, tok.chat
    extra = dict(chat_kwargs)
    return (
        tok,
        info,
        lambda messages, add_generation_prompt, tools=None: tok.chat(messages, add_generation_prompt, extra, tools),
    )


def load_tokenizer(
    model_cfg: dict[str, Any] | None, need_chat: bool = False
) -> tuple[ModelTokenizer | None, ModelInfo]:
    if not model_cfg:
        return None, ModelInfo(name="none", backend="none")
    add_bos = model_cfg.get("add_bos_token")
    if add_bos is not None and not isinstance(add_bos, bool):
        raise fail(f"must be true, false or null, got {add_bos!r}", field="model.add_bos_token")
    prefix = model_cfg.get("prefix_token_id")
    if prefix is not None and (isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 0):
        raise fail(f"must be a token id (an integer >= 0) or null, got {prefix!r}", field="model.prefix_token_id")
    ref = resolve_model_for_compile(model_cfg)
    tok = ModelTokenizer(ref.dir, add_bos, ref.tokenizer_identity, need_chat=need_chat, prefix_token_id=prefix)
    engine = model_cfg.get("engine") or {}
    info = ModelInfo(
        name=model_name(model_cfg.get("name") or ref.name, model_cfg.get("path")),  # a GGUF: its own name
        path=ref.hub_id,  # never a machine path
        backend=str(model_cfg.get("backend", "vllm")),
        tokenizer=ref.tokenizer_identity,
        tokenizer_hash=tok.tokenizer_hash,
        add_bos_token=add_bos,  # type: ignore[arg-type]
        engine=dict(engine) if isinstance(engine, dict) else {},
        token_rule=tok.rule,
        revision=ref.revision,
        config_hash=ref.config_hash(),
        processor_hash=processor_hash(ref.dir),
    )
    return tok, info


def resolve_model_for_compile(model_cfg: dict[str, Any]) -> ModelRef:
    """``model.path`` (a directory, a Hub id through the Hugging Face cache, a GGUF file, null for the tiny
    model; ``model.gguf_file``, ``model.package``) as a ``ModelRef``; a compile error naming the setting when
    it cannot be found. A GGUF file is converted as far as compiling needs: tokenizer and config."""
    try:
        return resolve_model(
            model_cfg.get("path"),
            model_cfg.get("revision"),
            need="tokenizer",
            gguf_file=model_cfg.get("gguf_file"),
            package=model_cfg.get("package"),
        )
    except ModelRefError as e:
        raise CompileError(str(e)) from None
