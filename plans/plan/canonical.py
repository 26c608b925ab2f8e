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

_SCALARS = (type(None), bool, int, str)
_LEAVES = frozenset(_SCALARS)  # exact types that are already canonical
_STR_ONLY = frozenset({str})


def _norm(value: Any) -> Any:
    # hot path (every plan record goes through here): no path bookkeeping, leaves are not recursed into, type
    # sets are checked at C speed; _explain finds the culprit on error
    t = type(value)
    if t in _LEAVES:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        raise _Bad
    leaves = _LEAVES
    if t is dict:
        keys = list(value)
        if not set(map(type, keys)) <= _STR_ONLY:
            raise _Bad
        keys.sort()
        out = {}
        for k in keys:
            v = value[k]
            out[k] = v if type(v) in leaves else _norm(v)
        return out
    if t is list or t is tuple:
        if set(map(type, value)) <= leaves:  # token ids, strings: already canonical
            return list(value)
        return [v if type(v) in leaves else _norm(v) for v in value]
    if isinstance(value, _SCALARS + (float, dict, list, tuple)):  # subclasses (e.g. IntEnum, OrderedDict)
        return _norm(_plain(value))
    raise _Bad


class _Bad(Exception):
    pass


def _plain(value: Any) -> Any:
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return dict(value)
    return list(value)


def _explain(value: Any, path: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: non-finite float {value!r} cannot be encoded canonically"
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path}: map key {k!r} is not a string"
            found = _explain(v, f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _explain(v, f"{path}[{i}]")
            if found:
                return found
        return None
    if value is None or isinstance(value, bool | int | str | float):
        return None
    return f"{path}: value of type {type(value).__name__} cannot be encoded in a plan"


def normalize(value: Any, path: str = "$") -> Any:
    """Return ``value`` as plain msgpack-safe data with maps sorted by key; raise TypeError otherwise."""
    try:
        return _norm(value)
    except (_Bad, RecursionError):
        raise TypeError(_explain(value, path) or f"{path}: value cannot be encoded in a plan") from None


def canonical_bytes(value: Any) -> bytes:
    """Encode ``value`` canonically (see module docstring)."""
    return msgpack.packb(normalize(value), use_bin_type=True)


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
