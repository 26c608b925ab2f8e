"""Reads a W&B offline run back: its ``run-<id>.wandb`` file (LevelDB log blocks, wandb's ``:W&B`` header) parsed
into wandb's own protobuf ``Record``s (``wandb.proto.wandb_internal_pb2``; wandb 0.31 ships no Python reader of
its own: its datastore moved into wandb-core), and the Table files the run wrote beside it."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
HEADER = struct.Struct("<4sHB")  # ":W&B", 0xBEE1, version 0
CHUNK = struct.Struct("<IHB")  # crc32, length, type (1 full, 2 first, 3 middle, 4 last)


def raw_records(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    ident, magic, version = HEADER.unpack_from(data)
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), (ident, magic, version)
    pos, pending = HEADER.size, b""
    while pos + CHUNK.size <= len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK.size:
            pos += left
            continue
        _, length, kind = CHUNK.unpack_from(data, pos)
        if kind == 0:
            pos += left
            continue
        body = data[pos + CHUNK.size : pos + CHUNK.size + length]
        pos += CHUNK.size + length
        if kind == 1:
            yield body
        elif kind == 2:
            pending = body
        elif kind == 3:
            pending += body
        elif kind == 4:
            yield pending + body


@dataclass
class OfflineRun:
    run_dir: Path
    name: str = ""
    project: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None

    def table(self, key: str) -> dict[str, Any]:
        """A logged Table's file (``columns``, ``data``), found through the summary's path to it."""
        path = self.summary[f"{key}.path"]
        return json.loads((self.run_dir / "files" / path).read_text(encoding="utf-8"))


def read_offline_run(run_dir: Path) -> OfflineRun:
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = run_dir.glob("run-*.wandb")
    out = OfflineRun(run_dir)
    for raw in raw_records(path):
        rec = pb.Record()  # type: ignore[attr-defined]  # generated protobuf module, no stubs
        rec.ParseFromString(raw)
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            out.name, out.project = rec.run.display_name, rec.run.project
            out.config.update({u.key: json.loads(u.value_json) for u in rec.run.config.update})
        elif kind == "config":
            out.config.update({u.key: json.loads(u.value_json) for u in rec.config.update})
        elif kind == "summary":
            for u in rec.summary.update:
                out.summary[u.key or ".".join(u.nested_key)] = json.loads(u.value_json)
        elif kind == "exit":
            out.exit_code = rec.exit.exit_code
    return out
