"""Shared plumbing that is not contract: atomic writes, file hashing, the tiny model, model lookup, conf/.

The face stays light: it re-exports the small helpers other packages use, each imported on first use
(``lazyface``), since every face imports this one for ``lazy_face``/``face_names`` (loading them all eagerly
would add json, hashlib, tempfile, random and shutil to ``import lmeval.compiler``).
"""

from typing import TYPE_CHECKING

from lmeval.common.lazyface import face_names as face_names
from lmeval.common.lazyface import lazy_face as lazy_face

if TYPE_CHECKING:
    from lmeval.common.atomic import os_error_of as os_error_of
    from lmeval.common.atomic import write_atomic as write_atomic
    from lmeval.common.cachefile import discard as discard
    from lmeval.common.cachefile import read_cache_file as read_cache_file
    from lmeval.common.conf import CONF_DIR as CONF_DIR
    from lmeval.common.conf import conf_dir as conf_dir
    from lmeval.common.errors import InputError as InputError
    from lmeval.common.errors import UserError as UserError
    from lmeval.common.errors import file_kind as file_kind
    from lmeval.common.errors import quoted as quoted
    from lmeval.common.filehash import file_sha256 as file_sha256
    from lmeval.common.filehash import text_sha256 as text_sha256
    from lmeval.common.gcpause import gc_paused as gc_paused
    from lmeval.common.jsontext import json_text as json_text
    from lmeval.common.modelref import ModelRef as ModelRef
    from lmeval.common.modelref import ModelRefError as ModelRefError
    from lmeval.common.modelref import config_hash as config_hash
    from lmeval.common.modelref import model_name as model_name
    from lmeval.common.modelref import parse_hub_id as parse_hub_id
    from lmeval.common.modelref import processor_hash as processor_hash
    from lmeval.common.modelref import resolve_model as resolve_model
    from lmeval.common.modelref import tokenizer_hash as tokenizer_hash
    from lmeval.common.termsafe import SafeStdout as SafeStdout
    from lmeval.common.termsafe import term_safe as term_safe
    from lmeval.common.timelimit import deadline as deadline

__all__, __getattr__, __dir__ = lazy_face(__name__)
