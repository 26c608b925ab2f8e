"""lm-eval's installed task catalog by name, and the listing behind ``lmeval ls``.

When lm-eval is installed, its ``lm_eval/tasks`` folder is a built-in include path: every task, group and
tag name it defines resolves as lm-eval's ``TaskManager`` resolves it (``compiler.tasks.yamls`` indexes it with
the same rules). Lookup order for a name: ``run.include_path`` folders, then ``conf/task`` (our configs
win on a clash), then lm-eval's catalog; ``lm_eval:NAME`` names the catalog's entry explicitly.

Indexing lm-eval's ~14,000 YAML files takes seconds, so the index is cached as JSON under
``$LMEVAL_CACHE/catalog`` (default ``~/.cache/lmeval/catalog``), keyed by lm-eval's version, its task folder
and the path, size and mtime of every YAML file in it (one ``stat`` walk, a fraction of a second), so an
edited, added or removed YAML rebuilds it. lm-eval itself is never imported here.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lmeval.common import InputError, discard, read_cache_file, write_atomic
from lmeval.compiler.tasks.yamls import QUALIFIER, Entry, Index, build_index
from lmeval.plans import lm_eval_tasks_dir

INDEX_FORMAT = 2  # bump when what build_index records changes
MAX_INDEX_BYTES = 64 << 20  # lm-eval's whole catalog indexes to a few MB; a longer cache file is not ours
_KINDS = ("task", "group", "tag")


def catalog_root() -> Path | None:
    """The folder the catalog indexes: lm-eval's installed task folder (the contract's ``lm_eval_tasks_dir``)
    when it is one, none with ``LMEVAL_NO_CATALOG=1``."""
    if os.environ.get("LMEVAL_NO_CATALOG", "").strip() not in ("", "0"):
        return None
    d = lm_eval_tasks_dir()
    return d if d is not None and d.is_dir() else None


def lm_eval_version() -> str:
    try:
        from importlib.metadata import version

        return version("lm_eval")
    except Exception:  # noqa: BLE001
        return "unknown"


def cache_dir() -> Path:
    base = os.environ.get("LMEVAL_CACHE") or str(Path.home() / ".cache" / "lmeval")
    return Path(base).expanduser() / "catalog"


def _fingerprint(root: Path) -> str:
    h = hashlib.sha256(f"{INDEX_FORMAT}\0{lm_eval_version()}\0{root}\0".encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".ipynb_checkpoints"))
        for name in sorted(filenames):
            if name.endswith(".yaml"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{os.path.relpath(dirpath, root)}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _output_type(e: Entry) -> str | None:
    if e.kind != "task" or e.cfg is None:
        return None
    ot = e.cfg.get("output_type", "generate_until")
    return ot if isinstance(ot, str) else None


def _to_json(index: Index, root: Path) -> dict[str, Any]:
    def rel(p: Path | None) -> str | None:
        return None if p is None else p.relative_to(root).as_posix()

    return {
        "entries": [
            {
                "name": e.name,
                "kind": e.kind,
                "path": rel(e.path),
                "members": e.members,
                "output_type": _output_type(e),
                "unsupported": e.unsupported,
            }
            for e in index.entries.values()
        ],
        "broken": {rel(Path(p)): why for p, why in index.broken.items()},
    }


@dataclass
class Catalog:
    root: Path
    index: Index
    output_types: dict[str, str | None]


class _Inside:
    """Checks the paths an index names against its task folder ``root``. Each folder is resolved once (a folder
    that is a symlink out of ``root`` is caught); the file itself is taken as the folder holds it: the index is
    read at every compile, and a link that the task folder itself holds is lm-eval's, not the cache's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base = str(root)
        self.real_root = os.path.realpath(root)
        self.dirs: dict[str, bool] = {"": True}

    def __call__(self, rel: object) -> Path:
        """``root / rel``; ValueError (the index is bad) unless ``rel`` is a plain relative path that stays inside
        ``root`` once its folders are resolved: an index never sends a compile to a YAML (and its ``!function``
        code) outside lm-eval's task folder."""
        if not isinstance(rel, str) or not rel or "\0" in rel or os.path.isabs(rel):
            raise ValueError(f"catalog index: path {rel!r} is not relative to the task folder")
        parts = rel.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"catalog index: path {rel!r} is not a plain path inside the task folder")
        folder = rel[: -len(parts[-1]) - 1] if len(parts) > 1 else ""
        ok = self.dirs.get(folder)
        if ok is None:
            real = os.path.realpath(os.path.join(self.base, folder))
            ok = self.dirs[folder] = os.path.commonpath([self.real_root, real]) == self.real_root
        if not ok:
            raise ValueError(f"catalog index: path {rel!r} leads out of the task folder")
        return self.root / rel


def _entry(d: Any, inside: Callable[[object], Path]) -> tuple[Entry, str | None]:
    """One index entry and its output type; ValueError when any field is not what ``_to_json`` writes."""
    if not isinstance(d, dict):
        raise ValueError("catalog index: an entry is not an object")
    name, kind, members, ot, why = d["name"], d["kind"], d["members"], d.get("output_type"), d.get("unsupported")
    if not isinstance(name, str) or kind not in _KINDS or not isinstance(members, list):
        raise ValueError("catalog index: an entry's name, kind or members are malformed")
    if not all(isinstance(m, str) for m in members) or not all(x is None or isinstance(x, str) for x in (ot, why)):
        raise ValueError("catalog index: an entry's members, output type or note are malformed")
    path = None if d["path"] is None else inside(d["path"])
    e = Entry(name, kind, path, None, list(members))
    e.unsupported = why
    return e, ot


def _from_json(data: Any, root: Path, *, fresh: bool = False) -> Catalog:
    """The catalog an index file holds; ValueError/KeyError/TypeError when it is malformed or names a path
    outside ``root`` (the caller then builds the index again). ``fresh``: ``data`` was just built here from the
    files themselves (its paths are those ``build_index`` found), not read back."""
    inside: Callable[[object], Path] = (lambda rel: root / str(rel)) if fresh else _Inside(root)
    entries: dict[str, Entry] = {}
    types: dict[str, str | None] = {}
    for d in data["entries"]:
        e, ot = _entry(d, inside)
        entries[e.name] = e
        types[e.name] = ot
    broken = {str(inside(p)): str(why) for p, why in data["broken"].items()}
    return Catalog(root, Index(entries, broken), types)


@cache
def catalog() -> Catalog | None:
    """lm-eval's catalog (cached on disk), or None when lm-eval is not installed."""
    root = catalog_root()
    if root is None:
        return None
    return load_catalog(root, cache_dir())


def load_catalog(root: Path, cache: Path) -> Catalog:
    """The index of the task YAMLs under ``root``, from ``cache`` when an index of exactly these files
    (paths, sizes, mtimes) is there, else built and stored."""
    key = _fingerprint(root)
    path = cache / f"lm_eval-{lm_eval_version()}-{key[:24]}.json"
    blob = read_cache_file(path, MAX_INDEX_BYTES)
    if blob is not None:
        try:
            return _from_json(json.loads(blob), root)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            pass
    discard(path)  # a bad index (a link, a FIFO, a path out of the folder, ...) is replaced, never followed
    index = build_index([root])
    data = _to_json(index, root)
    try:
        text = json.dumps(data)
        write_atomic(path, lambda f: f.write(text.encode("utf-8")))
        for old in cache.glob("lm_eval-*.json"):
            if old != path:
                old.unlink(missing_ok=True)  # indexes of files as they were before: never valid again
    except (OSError, InputError):
        pass  # a read-only cache only costs time
    return _from_json(data, root, fresh=True)


@dataclass(frozen=True)
class Listed:
    name: str
    kind: str  # task | group | tag
    output_type: str | None
    source: str  # conf/task | include_path | lm-eval
    path: str | None
    note: str = ""


def listing(conf_task_dir: Path, include_index: Index | None = None) -> list[Listed]:
    """Everything that can be named in ``run.tasks``/``+task``, each name once, resolved in lookup order;
    a shadowed lm-eval entry stays listed under ``lm_eval:NAME``."""
    from lmeval.compiler.tasks.lookup import conf_entries

    out: dict[str, Listed] = {}
    if include_index is not None:
        for e in include_index.entries.values():
            out[e.name] = Listed(
                e.name, e.kind, _output_type(e), "include_path", str(e.path) if e.path else None, e.unsupported or ""
            )
    for name, kind, ot, path in conf_entries(conf_task_dir):
        if name not in out:
            out[name] = Listed(name, kind, ot, "conf/task", path)
    cat = catalog()
    if cat is not None:
        for e in cat.index.entries.values():
            ot = cat.output_types.get(e.name)
            epath = str(e.path) if e.path else None
            if e.name in out:
                shadow = out[e.name]
                out[e.name] = Listed(
                    shadow.name,
                    shadow.kind,
                    shadow.output_type,
                    shadow.source,
                    shadow.path,
                    (shadow.note + "; " if shadow.note else "")
                    + f"shadows lm-eval's {e.kind} (use {QUALIFIER}{e.name})",
                )
                q = QUALIFIER + e.name
                out[q] = Listed(q, e.kind, ot, "lm-eval", epath, e.unsupported or "shadowed by " + shadow.source)
            else:
                out[e.name] = Listed(e.name, e.kind, ot, "lm-eval", epath, e.unsupported or "")
    return sorted(out.values(), key=lambda x: x.name)
