"""Canonical msgpack encoding: the same value gives the same bytes on any machine, run and Python hash seed.

Rules: maps have string keys and are written sorted by key; tuples are written as lists; floats are always
float64; ints take msgpack's smallest form; strings are UTF-8; bytes, sets and other objects are refused.
NaN and infinities are refused too: they have no single canonical meaning in a data file.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import msgpack


def normalize(value: Any, path: str = "$") -> Any:
    """Return ``value`` as plain msgpack-safe data with maps sorted by key; raise TypeError otherwise."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError(f"{path}: non-finite float {value!r} cannot be encoded canonically")
        return value
    if isinstance(value, dict):
        out = {}
        for key in sorted(value, key=_key_of(path)):
            out[key] = normalize(value[key], f"{path}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [normalize(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"{path}: value of type {type(value).__name__} cannot be encoded in a plan")


def _key_of(path: str) -> Any:
    def key(k: Any) -> str:
        if not isinstance(k, str):
            raise TypeError(f"{path}: map key {k!r} is not a string")
        return k

    return key


def canonical_bytes(value: Any) -> bytes:
    """Encode ``value`` canonically (see module docstring)."""
    return msgpack.packb(normalize(value), use_bin_type=True, strict_types=False)


def pack_normalized(value: Any) -> bytes:
    """Encode a value that is already normalized (e.g. just read back from a plan)."""
    return msgpack.packb(value, use_bin_type=True)


def sha256_hex(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()


def content_hash(value: Any) -> str:
    """sha256 hex digest of a value's canonical encoding."""
    return sha256_hex(canonical_bytes(value))
