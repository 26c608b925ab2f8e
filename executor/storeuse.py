"""One run's use of the result store (``executor/answerstore.py``): look up the pending Instances first, turn the
answers found into this plan's rows (``source`` = ``stored``), and store every answer the engine computes as
its rows reach the results directory (``StoringSink``; a pool run's rows are stored from its parts at the end).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from lmeval.executor.answerkey import answer_key, reasoning_rule, request_part
from lmeval.executor.answerstore import RULE, AnswerStore, StoreEntry, run_model_key, store_location
from lmeval.executor.instances import instance_columns
from lmeval.executor.modelconf import ModelSpec
from lmeval.plans import InstanceRecord, PlanHeader

BATCH = 256  # answers per store transaction while a run streams


def plan_row(inst: InstanceRecord, answer: dict[str, Any], source: str) -> dict[str, Any]:
    """``answer`` (the answer columns of a stored or reused row) as the row of ``inst`` in this plan."""
    return {**answer, **instance_columns(inst), "source": source}


class StoreUse:
    """The store of one run (None inside when ``run.store=off`` or the store is unusable) and its model key."""

    def __init__(
        self,
        setting: str | None,
        spec: ModelSpec,
        ident: dict[str, Any],
        model_dir: Path | None,
        need_key: bool,
        create: bool = True,
    ) -> None:
        """``need_key``: compute the model key even without a store (``--reuse`` compares it); ``create=False``:
        a store that does not exist yet is not made (a look that writes nothing, as the estimate's)."""
        self.location = store_location(setting)
        self.store = AnswerStore.open(self.location, create=create)
        self.seed = spec.seed
        self.rule = reasoning_rule(spec.reasoning)
        keyed = self.store is not None or need_key
        self.model_key = run_model_key(spec, ident, model_dir, self.store) if keyed else ""

    def manifest_info(self) -> dict[str, Any]:
        """What the manifest records: the store's file (when on), this run's model key (when computed) and its
        engine seed (what ``--reuse`` of this run checks)."""
        where = {"path": str(self.store.path)} if self.store is not None else {}
        key = {"model_key": self.model_key} if self.model_key else {}
        return {**where, **key, "seed": self.seed}

    def key(self, inst: InstanceRecord) -> tuple[str, str]:
        return answer_key(self.model_key, inst, self.seed), request_part(inst, self.seed)

    def lookup(self, todo: Sequence[InstanceRecord]) -> dict[str, dict[str, Any]]:
        """The stored answers of ``todo`` by instance id (each verified; see ``AnswerStore.get``)."""
        if self.store is None or not todo:
            return {}
        keys = {i.instance_id: self.key(i) for i in todo}
        found = self.store.get({k: (self.model_key, part) for k, part in keys.values()})
        self.store.touch(list(found))
        return {iid: self.counted(found[k]) for iid, (k, _) in keys.items() if k in found}

    def counted(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A stored answer's columns; its ``reasoning_tokens`` only if counted under this run's reasoning rule."""
        out = {k: v for k, v in answer.items() if k != RULE}
        if answer.get(RULE) != self.rule:
            out["reasoning_tokens"] = None
        return out

    def entries(self, rows: Sequence[dict[str, Any]], by_id: dict[str, InstanceRecord]) -> list[StoreEntry]:
        out = []
        for row in rows:
            inst = by_id.get(row["instance_id"])
            if inst is not None and row.get("source") == "computed":
                k, part = self.key(inst)
                out.append(StoreEntry(k, self.model_key, part, row, self.rule))
        return out

    def store_dir_rows(self, out_dir: Path, todo: Sequence[InstanceRecord]) -> None:
        """Store the computed rows of ``todo`` a pool run wrote into ``out_dir``."""
        if self.store is None or not todo:
            return
        from lmeval.plans import part_files, read_parts

        by_id = {i.instance_id: i for i in todo}
        rows = [r for r in read_parts(part_files(out_dir)).iter_rows(named=True) if r["instance_id"] in by_id]
        for i in range(0, len(rows), BATCH):
            self.store.put(self.entries(rows[i : i + BATCH], by_id))

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def answered_ids(
    plan_path: str,
    header: PlanHeader,
    instances: Sequence[InstanceRecord],
    overrides: Sequence[str] = (),
    setting: str | None = None,
) -> set[str]:
    """The instance ids of ``instances`` (of the plan at ``plan_path``) whose answers the result store
    ``setting`` (``run.store``; None: the default) holds for the model ``overrides`` select: what an execute
    with the same model and store would not compute. Resolves the model as execute does; writes nothing."""
    from lmeval.executor.answerstore import stored_request_ids
    from lmeval.executor.modelconf import model_identity
    from lmeval.executor.runmodel import resolve_run_model

    rm = resolve_run_model(plan_path, header, overrides, instances)
    ident = model_identity(rm.spec, rm.model_dir, rm.tok_hash, rm.ref)
    use = StoreUse(setting, rm.spec, ident, rm.model_dir, need_key=False, create=False)
    try:
        return stored_request_ids(use.store, use.model_key, instances, rm.spec.seed)
    finally:
        use.close()


class RowSink(Protocol):
    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None: ...

    def flush(self) -> None: ...


class StoringSink:
    """A ``jobloop.Sink`` that hands rows on to ``inner`` (the results directory's writer) and stores the
    computed answers, ``BATCH`` per transaction."""

    def __init__(self, inner: RowSink, use: StoreUse, todo: Sequence[InstanceRecord]) -> None:
        self.inner = inner
        self.use = use
        self.by_id = {i.instance_id: i for i in todo}
        self.pending: list[dict[str, Any]] = []

    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None:
        self.inner.add(rows, tokens)
        if self.use.store is not None:
            self.pending.extend(rows)
            if len(self.pending) >= BATCH:
                self.commit()

    def flush(self) -> None:
        self.inner.flush()
        self.commit()

    def commit(self) -> None:
        if self.use.store is not None and self.pending:
            self.use.store.put(self.use.entries(self.pending, self.by_id))
        self.pending = []
