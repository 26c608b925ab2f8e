"""The build cache's key for one task: sha256 over everything that determines the task's plan bytes, or None
when some input cannot be pinned down (the task is then always built).

What goes in (``task_key``):

- the compiler's own version: the sha256 of every Python file of lmeval's ``compiler``, ``plans`` and
  ``common`` packages (task library included), lmeval's version, the cache format, Python's version and the
  versions of the libraries that shape prompts, token ids or bytes (jinja2, tokenizers, transformers, msgpack,
  zstandard, datasets, numpy, lm-eval, hydra, omegaconf, PyYAML);
- the model's tokenizer: its identity, ``tokenizer.json`` hash, token rule, and the bytes of every other
  non-weight file of the model folder (tokenizer_config.json, special tokens, chat template files, ...), plus
  the chat template itself when one is applied;
- the run options that reach a task (``BuildOptions``: few-shot count and seed, limit, run.seed's slots, chat
  settings, system instruction, gen_kwargs, data_dir);
- the task config as resolved (``TaskConfig``, every field, functions as name + folder + file);
- the task's data: every file of its local data folder (names and bytes; a split file appearing or
  vanishing changes the key), or the files ``dataset_kwargs.data_files`` names, or the documents a JSONL task
  spec carries (in the config); a Hub dataset or a ``custom_dataset`` function gives no key;
- the code of every function the config names: for a task folder, every Python file under it (sha256, as the
  plan records them: ``plans.funcref.hash_tree``) and the name, size and mtime of its other files; lmeval's
  built-in hooks and task library are in the compiler's version, lm-eval's modules in its version; any other
  installed module gives no key, and a ``custom_dataset`` function gives one only from lmeval's task library
  (the embedded arith task).

A task compiled with ``run.seed`` null (Python's global ``random`` unseeded) or with numpy unseeded while it runs
Python functions gives no key either: its prompts are not a function of its inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, fields, is_dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from lmeval.compiler.build import BuildOptions, DataSource, has_python, local_name
from lmeval.compiler.encode import ModelTokenizer
from lmeval.compiler.tasks import FunctionRef, TaskConfig, locate
from lmeval.plans import BUILTIN_MODULE, hash_tree, split_qualname, walk_code

CACHE_FORMAT = 1
_LIBRARIES = ("jinja2", "tokenizers", "transformers", "msgpack", "zstandard", "datasets", "numpy", "lm_eval",
              "hydra-core", "omegaconf", "PyYAML")  # fmt: skip
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".onnx", ".ckpt", ".msgpack")
_BIG = 64 << 20  # files larger than this enter a key by name, size and mtime instead of their bytes


class Uncacheable(Exception):
    """Some input of a task cannot be pinned down: no key."""


_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # lmeval/compiler/cache/key.py -> lmeval (links resolved)


def hashed_sources() -> list[Path]:
    """Every Python file of the compiler (its subsystems and task library included), plans and common."""
    out: list[Path] = []
    for sub in ("compiler", "plans", "common"):
        out += [p for p in sorted((_PACKAGE_ROOT / sub).rglob("*.py")) if "__pycache__" not in p.parts]
    return out


@lru_cache(maxsize=1)
def compiler_version() -> str:
    """sha256 over the compiler's, plans' and common's Python sources, lmeval's and the libraries' versions."""
    from importlib.metadata import PackageNotFoundError, version

    pkg = _PACKAGE_ROOT
    h = hashlib.sha256(f"lmeval-build-cache {CACHE_FORMAT}\n{sys.version}\n".encode())
    for p in hashed_sources():
        h.update(f"{p.relative_to(pkg).as_posix()}\0".encode())
        h.update(hashlib.sha256(p.read_bytes()).digest())
    for name in ("lmeval", *_LIBRARIES):
        try:
            v = version(name)
        except PackageNotFoundError:
            v = "-"
        h.update(f"{name}={v}\n".encode())
    return h.hexdigest()


def _file_digest(p: Path, h: Any) -> None:
    st = p.stat()
    if st.st_size > _BIG:
        h.update(f"{p.name}\0big\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return
    h.update(f"{p.name}\0{st.st_size}\0".encode())
    h.update(hashlib.sha256(p.read_bytes()).digest())


def tokenizer_key(tok: ModelTokenizer | None, chat_template: bool) -> str:
    """The tokenizer's part of every key of a compile (computed once per compile)."""
    if tok is None:
        return "no-tokenizer"
    h = hashlib.sha256()
    h.update(_stable([tok.identity, tok.tokenizer_hash, asdict(tok.rule), tok.add_bos_token, tok.fast]).encode())
    folder = Path(tok.source_dir)
    for p in sorted(folder.iterdir()):
        if p.is_file() and not p.name.endswith(_WEIGHTS):
            _file_digest(p, h)
    if chat_template:
        h.update(b"chat\0" + (tok.chat_template or "").encode())
    return h.hexdigest()


def _stable(value: Any) -> str:
    return json.dumps(_plain(value), ensure_ascii=True, separators=(",", ":"))


def _plain(v: Any) -> Any:
    """A JSON-able, type-tagged, order-keeping form of a config value (Uncacheable for anything else)."""
    if v is None or isinstance(v, bool | str):
        return v
    if isinstance(v, int):
        return {"i": str(v)}
    if isinstance(v, float):
        return {"f": repr(v)}
    if isinstance(v, FunctionRef):
        return {"fn": [v.qualname, v.base_dir, v.source]}
    if isinstance(v, dict):
        return {"d": [[_plain(k), _plain(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return {"l": [_plain(x) for x in v]}
    if isinstance(v, tuple):
        return {"t": [_plain(x) for x in v]}
    if is_dataclass(v) and not isinstance(v, type):
        return {"dc": [type(v).__qualname__, [[f.name, _plain(getattr(v, f.name))] for f in fields(v)]]}
    raise Uncacheable(f"a config value of type {type(v).__name__}")


def _refs(v: Any, out: list[FunctionRef]) -> None:
    if isinstance(v, FunctionRef):
        out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            _refs(x, out)
    elif isinstance(v, list | tuple):
        for x in v:
            _refs(x, out)
    elif is_dataclass(v) and not isinstance(v, type):
        for f in fields(v):
            _refs(getattr(v, f.name), out)


def _code(spec: TaskConfig, h: Any) -> None:
    refs: list[FunctionRef] = []
    _refs(spec, refs)
    seen: set[Path] = set()
    for ref in refs:
        parts = split_qualname(ref.qualname)
        if parts is not None and parts[0] == [BUILTIN_MODULE]:
            h.update(f"builtin\0{ref.qualname}\n".encode())  # lmeval's built-in hooks: the compiler's version
            continue
        try:
            loc = locate(ref)
        except Exception as e:  # noqa: BLE001 - the build reports it
            raise Uncacheable(f"function {ref.qualname}: {e}") from None
        h.update(f"fn\0{ref.qualname}\0{loc.path}\0{loc.root}\0{loc.module}\n".encode())
        if loc.root is not None:
            if loc.root in seen:
                continue
            seen.add(loc.root)
            try:
                code = hash_tree(loc.root)
            except Exception as e:  # noqa: BLE001
                raise Uncacheable(f"task folder {loc.root}: {e}") from None
            h.update(_stable(sorted(code.items())).encode())
            for dirpath, names in walk_code(loc.root):
                for name in sorted(names):
                    if not name.endswith(".py"):
                        p = Path(dirpath) / name
                        st = p.stat()
                        h.update(f"{p.relative_to(loc.root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        elif _own(loc.module):
            continue  # in the compiler's version (lmeval) or lm-eval's version
        else:
            raise Uncacheable(f"function {ref.qualname} from installed module {loc.module}")


def _own(module: str | None) -> bool:
    """lmeval's own modules (in the compiler's version) and lm-eval's (in its version)."""
    return module is not None and module.split(".")[0] in ("lmeval", "lm_eval")


def _data(spec: TaskConfig, opts: BuildOptions, h: Any) -> None:
    if spec.preloaded is not None:
        return  # the documents are in the config
    if spec.custom_dataset is not None:
        # lmeval's own generators (the embedded arith task) are functions of the config; anything else may read
        # files no key sees
        try:
            own = _own(locate(spec.custom_dataset).module)
        except Exception:  # noqa: BLE001 - the build reports it
            own = False
        if not own:
            raise Uncacheable("a custom_dataset function loads the documents")
        return
    kwargs = spec.dataset_kwargs or {}
    if spec.dataset_path in ("json", "jsonl") and kwargs.get("data_files"):
        files = kwargs["data_files"]
        items = list(files.values()) if isinstance(files, dict) else [files]
        for item in items:
            for f in item if isinstance(item, list) else [item]:
                p = Path(str(f)).expanduser()
                if not p.is_file():
                    raise Uncacheable(f"data file {p} is not there")
                h.update(f"data_file\0{p.resolve()}\0".encode())
                _file_digest(p, h)
        return
    if spec.doc_to_image is not None:  # image files live beside the data, anywhere under its folder
        raise Uncacheable("a task with images (doc_to_image)")
    ds = DataSource(spec, opts.data_dir)
    if ds.data_dir is None or spec.dataset_path is None:
        raise Uncacheable("documents from the datasets library (the Hub or its cache)")
    splits = [spec.training_split, spec.validation_split, spec.test_split, spec.fewshot_split, spec.fewshot.split]
    if any(s is not None and ("/" in s or s.startswith(".")) for s in splits):
        raise Uncacheable("a split name that is a path")
    folder = Path(ds.data_dir) / local_name(spec.dataset_path, spec.dataset_name)
    h.update(f"data_dir\0{folder.resolve()}\n".encode())
    for p in sorted(folder.iterdir()):
        if p.is_file():
            _file_digest(p, h)
        else:
            h.update(f"{p.name}\0not-a-file\n".encode())


def task_key(spec: TaskConfig, opts: BuildOptions, tokenizer: str) -> str | None:
    """The task's build-cache key (hex sha256), or None when it has none (see the module docstring)."""
    if opts.python_seed is None or (opts.numpy_seed is None and has_python(spec.raw)):
        return None
    h = hashlib.sha256()
    try:
        h.update(compiler_version().encode())
        h.update(tokenizer.encode())
        # run.data_dir is a location: the data folder it leads to enters below, resolved, with its files
        h.update(_stable(asdict(replace(opts, data_dir=None))).encode())
        h.update(_stable(spec).encode())
        _code(spec, h)
        _data(spec, opts, h)
    except (Uncacheable, OSError):
        return None
    return h.hexdigest()


def workers_from_env(default: int | None = None) -> int:
    """``LMEVAL_COMPILE_JOBS`` (a positive integer), else ``default``, else the number of CPUs."""
    raw = os.environ.get("LMEVAL_COMPILE_JOBS", "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n > 0:
            return n
    return default or os.cpu_count() or 1
