"""A memo of Hydra's composition, kept in the build cache (``compiler.cache.store``): a compile whose overrides and
``conf/`` are those of an earlier one takes the composed config from there and imports neither Hydra nor
OmegaConf (most of a warm compile's time otherwise).

The key (``compose_key``) is a sha256 over everything the composition reads: the overrides as Hydra gets them
(a location's path left out: ``SLOTS``), the path and the bytes of every file under the config folder, the
compiler's version (``cache.key``: lmeval's sources, Hydra's, OmegaConf's and PyYAML's versions among the rest)
and the installed Hydra plugins. There is no key (no memo) when an override holds an interpolation (``${...}``:
a resolver may read the environment) or sets ``hydra.*`` (a search path), or a config file holds one. An entry
is a sha256 and the msgpack of the composed config (plain data: msgpack keeps int, float, bool, str and None
apart, and key order); one failing its check is removed and ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import msgpack

from lmeval.common import discard, read_cache_file
from lmeval.compiler.cache.store import put_bytes

_MAGIC = b"LMEVAL-COMPOSED-1\n"
_SUFFIX = ".lcc"
_MAX_BYTES = 64 << 20  # a composed config is a few KB; a longer memo, or one not a regular file, is ignored
# Location settings that differ from run to run (the output file, the data folder): an override setting one to a
# plain path enters the key as a slot, without its value, and the memo holds None there; the value is put back
# when the memo is read. A path here is what Hydra keeps as that very string (checked when the memo is made).
SLOTS = ("run.out", "run.data_dir")
_PATH = re.compile(r"[A-Za-z0-9_./-]*/[A-Za-z0-9_./-]*")


def split_slots(overrides: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """(the overrides with every slot's value blanked, {slot: path}); None when a slot is set twice."""
    rest: list[str] = []
    slots: dict[str, str] = {}
    for o in overrides:
        name, eq, value = o.partition("=")
        if eq and name in SLOTS and _PATH.fullmatch(value):
            if name in slots:
                return None
            slots[name] = value
            o = f"{name}=<slot>"
        rest.append(o)
    return rest, slots


def blank_slots(data: dict[str, Any], slots: dict[str, str]) -> dict[str, Any] | None:
    """``data`` (a fresh composition) with each slot set to None, or None when a slot is not the path as given."""
    try:
        out = msgpack.unpackb(msgpack.packb(data, use_bin_type=True), raw=False, strict_map_key=False)
    except (TypeError, ValueError, OverflowError):
        return None
    for name, value in slots.items():
        section, key = name.split(".")
        body = out.get(section)
        if not isinstance(body, dict) or type(body.get(key)) is not str or body[key] != value:
            return None
        body[key] = None
    return out  # type: ignore[no-any-return]


def fill_slots(data: dict[str, Any], slots: dict[str, str]) -> dict[str, Any] | None:
    for name, value in slots.items():
        section, key = name.split(".")
        body = data.get(section)
        if not isinstance(body, dict) or key not in body or body[key] is not None:
            return None
        body[key] = value
    return data


def compose_key(overrides: list[str], conf: Path) -> str | None:
    """The memo key of composing ``conf`` with ``overrides`` (None: not to be memoized)."""
    from lmeval.compiler.cache.key import compiler_version

    if any("${" in o or o.lstrip("+~").startswith("hydra") for o in overrides):
        return None  # a resolver may read the environment; hydra.searchpath may add config folders
    h = hashlib.sha256(_MAGIC + compiler_version().encode())
    h.update(repr(overrides).encode())
    h.update(f"\0{conf.resolve()}\0{_plugins()}\0".encode())
    for p in sorted(conf.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if b"${" in data:
                return None
            h.update(f"{p.relative_to(conf).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def _plugins() -> str:
    """The installed ``hydra_plugins`` (a plugin may add config search paths)."""
    try:
        spec = importlib.util.find_spec("hydra_plugins")
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.submodule_search_locations:
        return ""
    names: list[str] = []
    for loc in spec.submodule_search_locations:
        with contextlib.suppress(OSError):
            names += [f"{loc}/{n}" for n in os.listdir(loc)]
    return "\n".join(sorted(names))


def _path(root: Path, key: str) -> Path:
    return root / key[:2] / f"{key}{_SUFFIX}"


def load_composed(root: Path, key: str) -> dict[str, Any] | None:
    """The composition remembered under ``key``, or None (missing, not a regular file, or failing its check:
    such a memo is removed and Hydra composes again)."""
    p = _path(root, key)
    blob = read_cache_file(p, _MAX_BYTES)
    if blob is None:
        discard(p)
        return None
    head = len(_MAGIC) + 32
    if blob[: len(_MAGIC)] == _MAGIC and hashlib.sha256(blob[head:]).digest() == blob[len(_MAGIC) : head]:
        try:
            data = msgpack.unpackb(blob[head:], raw=False, strict_map_key=False)
        except Exception:  # noqa: BLE001 - a payload whose hash matched but does not decode: ignored
            data = None
        if isinstance(data, dict):
            with contextlib.suppress(OSError):
                os.utime(p)
            return data
    discard(p)
    return None


def store_composed(root: Path, key: str, data: dict[str, Any]) -> None:
    """Remember ``data`` under ``key`` (skipped when it does not round-trip exactly or cannot be written)."""
    try:
        payload = msgpack.packb(data, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):
        return
    if msgpack.unpackb(payload, raw=False, strict_map_key=False) != data:
        return
    put_bytes(_path(root, key), _MAGIC + hashlib.sha256(payload).digest() + payload)
