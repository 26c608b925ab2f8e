"""Shared plumbing that is not contract: atomic writes, file hashing, the tiny model, model lookup, conf/.

The face stays light (stdlib only): it re-exports the small helpers other packages use.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lmeval.common.atomic import write_atomic
from lmeval.common.cachefile import read_cache_file
from lmeval.common.conf import conf_dir
from lmeval.common.errors import InputError, UserError, file_kind, quoted
from lmeval.common.filehash import file_sha256
from lmeval.common.jsontext import json_text
from lmeval.common.termsafe import SafeStdout, term_safe

if TYPE_CHECKING:
    from lmeval.common.atomic import os_error_of
    from lmeval.common.cachefile import discard
    from lmeval.common.conf import CONF_DIR
    from lmeval.common.gcpause import gc_paused
    from lmeval.common.modelref import (
        ModelRef,
        ModelRefError,
        config_hash,
        model_name,
        parse_hub_id,
        processor_hash,
        resolve_model,
        tokenizer_hash,
    )
    from lmeval.common.timelimit import deadline


__all__ = [
    "CONF_DIR",
    "ModelRef",
    "ModelRefError",
    "config_hash",
    "deadline",
    "discard",
    "gc_paused",
    "model_name",
    "os_error_of",
    "parse_hub_id",
    "processor_hash",
    "resolve_model",
    "tokenizer_hash",
    "InputError",
    "SafeStdout",
    "UserError",
    "conf_dir",
    "file_kind",
    "file_sha256",
    "json_text",
    "quoted",
    "read_cache_file",
    "term_safe",
    "write_atomic",
]

# re-exported on first use (PEP 562), so that importing the face stays light: name -> its module
_LAZY = {
    "CONF_DIR": "lmeval.common.conf",
    "ModelRef": "lmeval.common.modelref",
    "ModelRefError": "lmeval.common.modelref",
    "config_hash": "lmeval.common.modelref",
    "deadline": "lmeval.common.timelimit",
    "discard": "lmeval.common.cachefile",
    "gc_paused": "lmeval.common.gcpause",
    "model_name": "lmeval.common.modelref",
    "os_error_of": "lmeval.common.atomic",
    "parse_hub_id": "lmeval.common.modelref",
    "processor_hash": "lmeval.common.modelref",
    "resolve_model": "lmeval.common.modelref",
    "tokenizer_hash": "lmeval.common.modelref",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
