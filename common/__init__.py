"""Shared plumbing that is not contract: atomic writes, file hashing, the tiny model, model lookup, conf/.

The face stays light (stdlib only): it re-exports the small helpers other packages use.
"""

from lmeval.common.atomic import write_atomic
from lmeval.common.cachefile import read_cache_file
from lmeval.common.conf import conf_dir
from lmeval.common.errors import InputError, UserError, file_kind
from lmeval.common.filehash import file_sha256
from lmeval.common.termsafe import SafeStdout, term_safe

__all__ = [
    "InputError",
    "SafeStdout",
    "UserError",
    "conf_dir",
    "file_kind",
    "file_sha256",
    "read_cache_file",
    "term_safe",
    "write_atomic",
]
