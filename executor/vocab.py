"""Token ids against the model's vocabulary, before any engine sees them.

A plan is data and may be forged: an id outside ``[0, vocab_size)`` makes vLLM or torch index past the
embedding table (an engine crash, a device-side assert, or reading other memory). ``check_token_ids``
refuses such a plan with one line naming the plan, Instance, task and doc, before the engine is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from lmeval.executor.errors import ExecuteError
from lmeval.plans import InputError, InstanceRecord, loads_json, open_regular


def vocab_size(model_dir: Path) -> int | None:
    """Rows of the model's embedding table (``vocab_size`` in config.json, or its ``text_config``'s)."""
    try:
        with open_regular(model_dir / "config.json", max_bytes=16 << 20, what="model config") as f:
            cfg = loads_json(f.read())
    except (InputError, OSError, ValueError, json.JSONDecodeError):
        return None
    if not isinstance(cfg, dict):
        return None
    for c in (cfg, cfg.get("text_config")):
        if isinstance(c, dict) and type(c.get("vocab_size")) is int and c["vocab_size"] > 0:
            return int(c["vocab_size"])
    return None


def check_token_ids(instances: Sequence[InstanceRecord], vocab: int, plan_path: str) -> None:
    """``ExecuteError`` for the first Instance holding a token id outside ``[0, vocab)``."""
    for inst in instances:
        for field, ids in (("context_ids", inst.context_ids), ("continuation_ids", inst.continuation_ids)):
            if not ids:
                continue
            lo, hi = min(ids), max(ids)
            if lo < 0 or hi >= vocab:
                bad = lo if lo < 0 else hi
                raise ExecuteError(
                    f"{plan_path}: task {inst.task}, doc {inst.doc_id}, Instance {inst.instance_id}: "
                    f"{field} holds token id {bad}, outside the model's vocabulary of {vocab} (0..{vocab - 1}); "
                    "the plan was forged or compiled for another model"
                )
