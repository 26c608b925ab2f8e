"""Shared plumbing that is not contract: atomic writes, file hashing, the tiny model, model lookup, conf/.

The face stays light (stdlib only): it re-exports the small helpers other packages use.
"""

from lmeval.common.filehash import file_sha256

__all__ = ["file_sha256"]
