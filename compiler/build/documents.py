"""Where a task's documents come from: local JSONL (``run.data_dir``), ``data_files``, a custom
dataset function, or the ``datasets`` library as lm-eval would load it.

Local layout: ``<data_dir>/<local_name>/<split>.jsonl`` where ``local_name`` is derived from the Hub
``dataset_path``/``dataset_name`` the config names (table below; else the path's last component, plus
``/<dataset_name>`` when there is one). Rows get every key seen in the split (missing ones as None), as a
Hugging Face JSON load would give them.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from lmeval.common import deadline
from lmeval.compiler.build.bounded import PROCESS_DOCS_SECONDS, Bounded
from lmeval.compiler.errors import fail
from lmeval.compiler.tasks import SHIPPED_TASKLIB, FunctionRef, TaskConfig, resolve
from lmeval.plans import MAX_DEPTH, MAX_ROW_BYTES, InputError, open_regular, value_problem

# (dataset_path, dataset_name) -> local directory; name None matches any name
LOCAL_NAMES: dict[tuple[str, str | None], str] = {
    ("allenai/ai2_arc", "ARC-Challenge"): "arc_challenge",
    ("allenai/ai2_arc", "ARC-Easy"): "arc_easy",
    ("ai2_arc", "ARC-Challenge"): "arc_challenge",
    ("ai2_arc", "ARC-Easy"): "arc_easy",
    ("openai/gsm8k", None): "gsm8k",
    ("gsm8k", None): "gsm8k",
    ("EleutherAI/asdiv", None): "asdiv",
    ("allenai/winogrande", None): "winogrande",
    ("winogrande", None): "winogrande",
    ("baber/piqa", None): "piqa",
    ("ybisk/piqa", None): "piqa",
    ("piqa", None): "piqa",
    ("aps/super_glue", "boolq"): "boolq",
    ("super_glue", "boolq"): "boolq",
    ("google/boolq", None): "boolq",
    ("openai/openai_humaneval", None): "humaneval",
    ("openai_humaneval", None): "humaneval",
    ("google-research-datasets/mbpp", None): "mbpp",
    ("mbpp", None): "mbpp",
    ("mandarjoshi/trivia_qa", None): "triviaqa",
    ("gorilla-llm/Berkeley-Function-Calling-Leaderboard", None): "bfcl",
}
_PER_NAME = {"cais/mmlu": "mmlu", "hails/mmlu_no_train": "mmlu"}


def local_name(dataset_path: str, dataset_name: str | None) -> str:
    hit = LOCAL_NAMES.get((dataset_path, dataset_name)) or LOCAL_NAMES.get((dataset_path, None))
    if hit:
        return hit
    base = _PER_NAME.get(dataset_path, dataset_path.rstrip("/").rsplit("/", 1)[-1])
    return f"{base}/{dataset_name}" if dataset_name else base


def read_jsonl(path: Path, *, task: str | None = None) -> list[dict[str, Any]]:
    """Rows of a JSONL data file under the limits of ``plans.limits`` (a regular file, lines of at most
    MAX_ROW_BYTES, values a plan can carry), the same rules ``lmeval validate`` applies to spec lines."""
    rows: list[dict[str, Any]] = []
    try:
        with open_regular(path, what="data file") as fh:
            data = fh.read()
    except InputError as e:
        raise fail(str(e).removeprefix(f"{path}: "), file=str(path), task=task) from None
    except OSError as e:
        raise fail(f"cannot read the data file: {e.strerror or e}", file=str(path), task=task) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise fail(f"not UTF-8 ({e.reason} at byte {e.start})", file=str(path), task=task) from None
    keys: dict[str, None] = {}
    ragged = False
    loads = json.loads
    for i, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_ROW_BYTES // 4 and len(line.encode("utf-8")) > MAX_ROW_BYTES:
            raise fail(f"data row longer than {MAX_ROW_BYTES} bytes", file=str(path), line=i, task=task)
        try:
            row = loads(line)
        except json.JSONDecodeError as e:
            raise fail(f"malformed data row: {e.msg} (column {e.colno})", file=str(path), line=i, task=task) from None
        except ValueError as e:  # an integer of more than 4300 digits
            raise fail(f"malformed data row: {str(e)[:120]}", file=str(path), line=i, task=task) from None
        except RecursionError:
            raise fail(f"data row nested deeper than {MAX_DEPTH} levels", file=str(path), line=i, task=task) from None
        if not isinstance(row, dict):
            raise fail(
                f"malformed data row: expected a JSON object, got {type(row).__name__}",
                file=str(path),
                line=i,
                task=task,
            )
        beyond = value_problem(row)
        if beyond is not None:
            raise fail(f"data row: {beyond[1]}", file=str(path), line=i, task=task)
        if len(row) != len(keys) or not all(k in keys for k in row):
            for k in row:
                if k not in keys:
                    keys[k] = None
                    if rows:
                        ragged = True
            if len(row) != len(keys):
                ragged = True
        rows.append(row)
    if ragged:
        rows = [r if len(r) == len(keys) else {k: r.get(k) for k in keys} for r in rows]
    return rows


class DataSource:
    """Loads the raw rows of a task's splits on demand (each split once)."""

    def __init__(self, config: TaskConfig, data_dir: str | None) -> None:
        self.config = config
        # run.data_dir is used for a Hub dataset only when its folder is there; others come from the Hub
        # as lm-eval loads them (e.g. `run.tasks=[arc_easy,hellaswag]` with only arc_easy local)
        local = (
            data_dir is not None
            and config.dataset_path is not None
            and (Path(data_dir) / local_name(config.dataset_path, config.dataset_name)).is_dir()
        )
        self.data_dir = data_dir if local else None
        self.requested_dir = data_dir
        self._splits: dict[str, list[dict[str, Any]]] = {}
        self._custom: dict[str, Any] | None = None
        self._hf: Any = None

    def describe(self) -> str:
        s = self.config
        return f"{s.dataset_path}" + (f" ({s.dataset_name})" if s.dataset_name else "")

    def split(self, name: str) -> list[dict[str, Any]]:
        if name not in self._splits:
            self._splits[name] = self._load(name)
        return self._splits[name]

    def has_split(self, split: str) -> bool:
        """False only when run.data_dir is used and the split's file is not there."""
        s = self.config
        if s.preloaded is not None or s.custom_dataset is not None or self.data_dir is None:
            return True
        if s.dataset_path in ("json", "jsonl") and (s.dataset_kwargs or {}).get("data_files"):
            return True
        return self.split_path(split).exists()  # whatever is there: read_jsonl refuses a non-file

    def split_path(self, split: str) -> Path:
        s = self.config
        assert self.data_dir is not None and s.dataset_path is not None
        return Path(self.data_dir) / local_name(s.dataset_path, s.dataset_name) / f"{split}.jsonl"

    def origin(self, split: str) -> str:
        """Where ``split``'s rows come from, as a message names it: the local data file, else the task file
        (rows written in it) or the dataset."""
        s = self.config
        if s.preloaded is not None:
            return s.source or s.name
        local = s.custom_dataset is None and not (
            s.dataset_path in ("json", "jsonl") and (s.dataset_kwargs or {}).get("data_files")
        )
        if local and self.data_dir is not None and s.dataset_path is not None:
            return str(self.split_path(split))
        return f"{self.describe()} split {split}"

    def _load(self, split: str) -> list[dict[str, Any]]:
        s = self.config
        if s.preloaded is not None:
            if split not in s.preloaded:
                raise fail(f"no split {split!r} in the task config", file=s.source, task=s.name)
            return s.preloaded[split]
        if s.custom_dataset is not None:
            return self._from_custom(split)
        kwargs = s.dataset_kwargs or {}
        if s.dataset_path in ("json", "jsonl") and kwargs.get("data_files"):
            return self._from_data_files(split, kwargs["data_files"])
        if self.data_dir is not None:
            assert s.dataset_path is not None
            path = Path(self.data_dir) / local_name(s.dataset_path, s.dataset_name) / f"{split}.jsonl"
            if not path.exists():  # anything else there (a directory, a device) is refused by read_jsonl
                raise fail(
                    f"missing data file {path} (split {split!r} of {self.describe()}; "
                    f"expected <data_dir>/{local_name(s.dataset_path, s.dataset_name)}/{split}.jsonl)",
                    task=s.name,
                    file=s.source,
                )
            return read_jsonl(path, task=s.name)
        return self._from_hub(split)

    def _from_data_files(self, split: str, data_files: Any) -> list[dict[str, Any]]:
        s = self.config
        if isinstance(data_files, str | list):
            data_files = {"train": data_files}
        if not isinstance(data_files, dict) or split not in data_files:
            raise fail(
                f"dataset_kwargs.data_files has no split {split!r}", file=s.source, task=s.name, field="dataset_kwargs"
            )
        files = data_files[split]
        rows: list[dict[str, Any]] = []
        for f in files if isinstance(files, list) else [files]:
            p = Path(str(f)).expanduser()
            if not p.exists():
                raise fail(
                    f"missing data file {p} (split {split!r})",
                    file=s.source,
                    task=s.name,
                    field="dataset_kwargs.data_files",
                )
            rows.extend(read_jsonl(p, task=s.name))
        return rows

    def _shipped_local(self, ref: Any) -> bool:
        """A dataset function of lmeval's own task library gets ``data_dir`` (the task's local data folder,
        ``<run.data_dir>/<local name>``) when run.data_dir holds it: MT-Bench joins two files of that folder."""
        return (
            self.data_dir is not None
            and isinstance(ref, FunctionRef)
            and ref.qualname.startswith(SHIPPED_TASKLIB)
            and "data_dir" in inspect.signature(resolve(ref, task=self.config.name, field="custom_dataset")).parameters
        )

    def _from_custom(self, split: str) -> list[dict[str, Any]]:
        s = self.config
        if self._custom is None:
            assert s.custom_dataset is not None
            fn = resolve(s.custom_dataset, task=s.name, field="custom_dataset")
            kwargs = {**(s.metadata or {}), **(s.dataset_kwargs or {})}
            if self._shipped_local(s.custom_dataset):
                assert self.data_dir is not None and s.dataset_path is not None
                kwargs["data_dir"] = str(Path(self.data_dir) / local_name(s.dataset_path, s.dataset_name))
            try:
                got = fn(**kwargs)
            except Exception as e:  # noqa: BLE001
                raise fail(
                    f"custom_dataset failed: {type(e).__name__}: {e}",
                    file=s.source,
                    task=s.name,
                    field="custom_dataset",
                ) from None
            if not hasattr(got, "keys"):
                raise fail(
                    "custom_dataset must return a mapping of split name to rows",
                    file=s.source,
                    task=s.name,
                    field="custom_dataset",
                )
            self._custom = {k: got[k] for k in got.keys()}
        if split not in self._custom:
            raise fail(
                f"custom dataset has no split {split!r} (has {sorted(self._custom)})",
                file=s.source,
                task=s.name,
                field="custom_dataset",
            )
        return [dict(r) for r in self._custom[split]]

    def _from_hub(self, split: str) -> list[dict[str, Any]]:
        s = self.config
        if self._hf is None:
            import logging

            quiet = [logging.getLogger(n) for n in ("huggingface_hub", "datasets", "fsspec", "urllib3")]
            levels = [lg.level for lg in quiet]
            for lg in quiet:
                lg.setLevel(logging.CRITICAL)  # no retry chatter: the failure becomes one line below
            try:
                import datasets

                kwargs = dict(s.dataset_kwargs or {})
                kwargs.pop("trust_remote_code", None)
                self._hf = datasets.load_dataset(path=s.dataset_path, name=s.dataset_name, **kwargs)
            except Exception as e:  # noqa: BLE001 - offline, missing, or unknown dataset
                why = str(e).split("\n")[0][:200]
                local = local_name(s.dataset_path or "", s.dataset_name)
                hint = (
                    f"run.data_dir has no {local}/ folder (looked for {Path(self.requested_dir) / local})"
                    if self.requested_dir is not None
                    else f"for local data pass run.data_dir=DIR with DIR/{local}/<split>.jsonl"
                )
                raise fail(
                    f"cannot load dataset {self.describe()} with the datasets library ({type(e).__name__}: {why}); "
                    f"{hint}",
                    file=s.source,
                    task=s.name,
                    field="dataset_path",
                ) from None
            finally:
                for lg, lv in zip(quiet, levels, strict=True):
                    lg.setLevel(lv)
        if split not in self._hf:
            raise fail(f"dataset {self.describe()} has no split {split!r}", file=s.source, task=s.name)
        return [dict(r) for r in self._hf[split]]


def apply_process_docs(
    fn_ref: FunctionRef, rows: list[dict[str, Any]], *, task: str, source: str | None
) -> list[dict[str, Any]]:
    """Run a ``process_docs`` function. lm-eval passes a ``datasets.Dataset``; so do we for functions
    outside lmeval's own task library (which takes and returns plain lists)."""
    fn = resolve(fn_ref, task=task, field="process_docs")
    own = getattr(fn, "__module__", "").startswith("lmeval.compiler.tasklib")
    try:
        with deadline(PROCESS_DOCS_SECONDS, f"process_docs {fn_ref.qualname}", Bounded):
            if own:
                out = fn(rows)
            else:
                import datasets

                out = fn(datasets.Dataset.from_list(rows))
            return [dict(r) for r in out]
    except Bounded as e:
        raise fail(str(e), file=source, task=task, field="process_docs") from None
    except Exception as e:  # noqa: BLE001
        raise fail(
            f"process_docs {fn_ref.qualname} failed: {type(e).__name__}: {e}",
            file=source,
            task=task,
            field="process_docs",
        ) from None


def joined(data: DataSource, split: str, join: dict[str, str], task: str, source: str | None) -> list[dict[str, Any]]:
    """``split``'s rows, each with the fields of the row of ``join["split"]`` whose ``join["key"]`` field equals
    its own (a task config's ``doc_join``; compiler/tasks/conversation.py); a row without a partner, or a key
    that is missing or repeated, is refused naming the row."""
    key, other = join["key"], join["split"]

    def bad(msg: str) -> Exception:
        return fail(msg, file=source, task=task, field="doc_join")

    partners: dict[Any, dict[str, Any]] = {}
    for i, row in enumerate(data.split(other)):
        k = row.get(key)
        if not isinstance(k, str | int) or k in partners:
            raise bad(f"row {i} of split {other!r}: key {key!r} is missing, not a string or number, or repeated")
        partners[k] = row
    out: list[dict[str, Any]] = []
    for i, row in enumerate(data.split(split)):
        k = row.get(key)
        partner = partners.get(k) if isinstance(k, str | int) else None
        if partner is None:
            raise bad(f"document {i} ({key}={str(k)[:40]!r}) has no row in split {other!r}")
        out.append({**row, **{f: v for f, v in partner.items() if f != key}})
    return out
