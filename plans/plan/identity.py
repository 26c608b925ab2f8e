"""What a plan's identity is made of: content, never where files live.

The resolved config a compile starts from mixes two kinds of values: *content* (tasks, prompts, seeds,
model name and engine settings) and *locations* the user passed (the output file, the data directory, the
include path, the model directory, a JSONL task spec's file). Locations differ between machines and runs
while every prompt stays the same, so they are not part of a plan: the compiler splits them off with
``split_locations`` before sealing, and ``plans.io.seal`` refuses a header that still holds one. Two
compiles that differ only in locations give byte-identical plans. Results manifests keep the locations an
execution used (plan file, model directory) for provenance.
"""

from __future__ import annotations

import copy
from typing import Any

# dotted keys of the resolved config that name a place on disk; ``*`` matches any one key
LOCATION_KEYS: tuple[str, ...] = (
    "run.out",  # the plan file being written
    "run.data_dir",  # <data_dir>/<dataset>/<split>.jsonl
    "run.include_path",  # directories of lm-eval task YAMLs
    "run.store",  # the result store's folder (or off): where answers are kept, never what they are
    "model.path",  # the model directory (weights, tokenizer): identity is name + tokenizer hash
    "model.gguf_file",  # a GGUF file in that directory or Hub repo: identity is its sha256 (model.tokenizer)
    "model.package",  # the installed Python package that ships the model file (the smollm2 preset)
    "task.*.path",  # a JSONL task spec file (``kind: jsonl_spec``): its documents are in the plan
)


def _matches(path: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(path) == len(pattern) and all(p == "*" or p == k for k, p in zip(path, pattern, strict=True))


def split_locations(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(portable config, locations)``: ``config`` without its location keys, and those keys' values by
    dotted name (only those that are set). ``config`` itself is not modified."""
    portable = copy.deepcopy(config)
    found: dict[str, Any] = {}
    for key in LOCATION_KEYS:
        pattern = tuple(key.split("."))
        _pop(portable, (), pattern, found)
    return portable, found


def _pop(node: Any, path: tuple[str, ...], pattern: tuple[str, ...], found: dict[str, Any]) -> None:
    if not isinstance(node, dict) or len(path) >= len(pattern):
        return
    for k in list(node):
        sub = (*path, str(k))
        if not _matches(sub, pattern[: len(sub)]):
            continue
        if len(sub) == len(pattern):
            value = node.pop(k)
            if value is not None:
                found[".".join(sub)] = value
        else:
            _pop(node[k], sub, pattern, found)


def locations_in(config: dict[str, Any]) -> list[str]:
    """The location keys ``config`` still sets (dotted; a null is no location): empty for a portable config."""
    present: list[str] = []
    for key in LOCATION_KEYS:
        present += _present(config, (), tuple(key.split(".")))
    return sorted(present)


def _present(node: Any, path: tuple[str, ...], pattern: tuple[str, ...]) -> list[str]:
    if not isinstance(node, dict):
        return []
    out: list[str] = []
    for k, v in node.items():
        sub = (*path, str(k))
        if not _matches(sub, pattern[: len(sub)]):
            continue
        if len(sub) == len(pattern):
            if v is not None:
                out.append(".".join(sub))
        else:
            out += _present(v, sub, pattern)
    return out
