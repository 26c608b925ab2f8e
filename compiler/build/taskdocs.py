"""A task's documents, as lm-eval 0.4.13's ConfigurableTask finds them: the evaluation split and the few-shot
pool (``fewshot_split``, ``fewshot_config.samples``, else training, validation, test), each processed by the
task's ``process_docs`` in lm-eval's order, splits without a local file treated as absent, ``run.subsample``'s
draw and the number of shots. ``builder.TaskBuilder`` renders them.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from lmeval.compiler.build.documents import DataSource, apply_process_docs, joined, local_name
from lmeval.compiler.build.images import ImageReader
from lmeval.compiler.build.records import BuildOptions, ChatFn
from lmeval.compiler.errors import fail
from lmeval.compiler.tasks import SHIPPED_TASKLIB, FunctionRef, TaskConfig, resolve
from lmeval.plans import Drawn, choose, stratum_of

_log = logging.getLogger("lmeval.compile")


class TaskDocuments:
    """The documents one task is built from (``TaskBuilder`` adds the rendering)."""

    def __init__(self, config: TaskConfig, run: BuildOptions, chat: ChatFn | None) -> None:
        self.config = config
        self.run = run
        self.chat = chat if run.apply_chat_template else None
        self.data = DataSource(config, run.data_dir)
        self.notes: list[str] = []
        self._drop_absent_splits()
        # A task's own document functions (not lmeval's deterministic task library) run in lm-eval's order:
        # its ConfigurableTask.__init__ processes the few-shot source (fewshot_docs) before the evaluation
        # docs, even at 0 shots, and datasets' map cache hands back the same split processed by the same
        # function without running it again; what a function drawing from the global ``random`` sees
        # depends on that order (compiler/build/seeds.py).
        f = self.config.fewshot
        self._lm_eval_order = any(
            isinstance(ref, FunctionRef) and not ref.qualname.startswith(SHIPPED_TASKLIB)
            for ref in (self.config.process_docs, f.process_docs, f.samples)
        )
        self._memo: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        self.media: dict[str, bytes] = {}  # every image of the built documents: sha256 -> encoded bytes
        self.images = ImageReader(self._image_base())  # each image read and decoded once

    def _drop_absent_splits(self) -> None:
        """With run.data_dir, a split whose file is missing counts as absent (as if the config had no such
        split), so the few-shot pool falls back as lm-eval's does. The evaluation split must exist."""
        s = self.config
        if self.data.data_dir is None:
            return
        changes: dict[str, Any] = {}
        for key in ("training_split", "validation_split", "test_split", "fewshot_split"):
            split = getattr(s, key)
            if split is not None and not self.data.has_split(split):
                changes[key] = None
        fsplit = s.fewshot.split
        if fsplit is not None and not self.data.has_split(fsplit):
            changes["fewshot"] = replace(s.fewshot, split=None)
        if not changes:
            return
        eval_split = s.test_split if s.test_split is not None else s.validation_split
        new = replace(s, **changes)
        if new.test_split is None and new.validation_split is None:
            assert eval_split is not None
            raise fail(
                f"missing data file {self.data.split_path(eval_split)} (split {eval_split!r} of "
                f"{self.data.describe()})",
                file=s.source,
                task=s.name,
            )
        gone = {getattr(s, k) for k in changes if k != "fewshot"}
        if "fewshot" in changes:
            gone.add(fsplit)
        names = ", ".join(sorted(map(str, gone)))
        self.notes.append(f"{s.name}: no local file for split(s) {names}; treated as absent")
        self.config = new
        self.data.config = new

    def _processed(self, split: str, process: FunctionRef | None) -> list[dict[str, Any]]:
        key = (split, process.qualname if process is not None else None)
        if key in self._memo:
            return list(self._memo[key])
        rows = self.data.split(split)
        if process is not None:
            rows = apply_process_docs(process, rows, task=self.config.name, source=self.config.source)
        if self._lm_eval_order:  # each split processed once by each function, as lm-eval's map cache gives
            self._memo[key] = rows
            return list(rows)
        return rows

    def eval_docs(self) -> list[dict[str, Any]]:
        s = self.config
        split = s.test_split if s.test_split is not None else s.validation_split
        assert split is not None
        if s.doc_join is not None:
            rows = joined(self.data, split, s.doc_join, s.name, s.source)
            return apply_process_docs(s.process_docs, rows, task=s.name, source=s.source) if s.process_docs else rows
        return self._processed(split, s.process_docs)

    def fewshot_pool(self) -> list[dict[str, Any]]:
        s, f = self.config, self.config.fewshot
        if f.split is not None:
            return self._processed(f.split, f.process_docs)
        if f.samples is not None:
            if isinstance(f.samples, FunctionRef):
                fn = resolve(f.samples, task=s.name, field="fewshot_config.samples")
                got = fn()
                if not isinstance(got, list):
                    raise fail(
                        "function must return a list of documents",
                        file=s.source,
                        task=s.name,
                        field="fewshot_config.samples",
                    )
                return got
            return list(f.samples)
        if s.training_split is not None:
            return self._processed(s.training_split, s.process_docs)
        if s.validation_split is not None:
            return self._processed(s.validation_split, s.process_docs)
        assert s.test_split is not None
        return self._processed(s.test_split, s.process_docs)

    def resolve_num_fewshot(self) -> int:
        s, run_n = self.config, self.run.num_fewshot
        if run_n is not None:
            if s.num_fewshot == 0:
                self.notes.append(f"{s.name}: num_fewshot is 0 in the task config; run.num_fewshot={run_n} ignored")
                _log.info(self.notes[-1])
                return 0
            return run_n
        return s.num_fewshot if s.num_fewshot is not None else 0

    def _image_base(self) -> Path | None:
        """The folder image paths are relative to: the task's local data folder (None without local data)."""
        s = self.config
        if self.data.data_dir is None or s.dataset_path is None:
            return None
        return Path(self.data.data_dir) / local_name(s.dataset_path, s.dataset_name)

    def _data_file(self) -> str:
        """The evaluation split's data file, as a warning names it."""
        s = self.config
        split = s.test_split if s.test_split is not None else s.validation_split
        assert split is not None
        return self.data.origin(split)

    def _subsample(self, docs: list[dict[str, Any]]) -> Drawn | None:
        """``run.subsample``'s documents of this task (``plans/vocab/subsample.py``), strata from the documents'
        ``strata`` field."""
        setting = self.run.subsample
        if setting is None:
            return None
        s, field = self.config, setting.strata
        if field is not None and field not in docs[0]:
            raise fail(
                f"the documents have no field {field!r} to stratify by",
                file=s.source,
                task=s.name,
                field="run.subsample.strata",
            )
        strata = [stratum_of(d.get(field)) if field is not None else "" for d in docs]
        return choose(s.name, strata, setting)
