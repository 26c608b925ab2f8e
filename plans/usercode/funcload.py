"""Finding and loading the code a plan's function reference records (``plans/usercode/funcref.py`` has the format):
one rule for the compiler (which runs prompt-shaping functions) and the scorer (which runs scoring hooks only
with the user's ``--trust-code``).

Finding the code again (``find_task_folder``): the scorer is given folders to search (``lmeval score
--include-path DIR``; ``lmeval run`` passes its own ``run.include_path``), then lmeval's ``conf/task`` and
lm-eval's installed task folders (``default_task_roots``). The task folder is a folder under one of them
whose ``file`` has the recorded sha256 and whose every recorded file matches its hash: content, not place,
identifies it. An installed module is found by its import machinery (``funcref.module_file``), and its file
must match the sha256.

Loading (``load_module``) never reads bytecode caches: each module file under the task folder is read as
source, checked against its recorded hash, compiled and executed. Imports the code makes while loading
(``import sibling``, ``from pkg.task_dir import helper``) that resolve to a file under the folder go through
the same check, so a file that was not hashed at compile time, or changed since, is refused before it runs,
and a planted ``__pycache__/*.pyc`` is never used.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import threading
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lmeval.common import conf_dir
from lmeval.plans.usercode.funcref import (
    CodeRefused,
    installed_tree,
    is_inside,
    lm_eval_tasks_dir,
    sha256_file,
    walk_code,
)


class _VerifiedSource(importlib.abc.Loader):
    """Executes a module from its source bytes after checking them against the recorded hash."""

    def __init__(self, path: Path, want: str) -> None:
        self.path = path
        self.want = want

    def create_module(self, module_spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        data = self.path.read_bytes()
        got = hashlib.sha256(data).hexdigest()
        if got != self.want:
            raise CodeRefused(f"{self.path} changed since it was hashed (sha256 {got[:12]} != {self.want[:12]})")
        module.__file__ = str(self.path)
        code = compile(data, str(self.path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - the user consented to this exact file content


class _TreeGuard(importlib.abc.MetaPathFinder):
    """While a task module loads: imports resolving to a file under ``root`` load only hashed source."""

    def __init__(self, root: Path, files: Mapping[str, str]) -> None:
        self.root = root
        self.files = dict(files)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        module_spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if module_spec is None or not module_spec.origin or not module_spec.has_location:
            return None
        origin = Path(module_spec.origin).resolve()
        if not is_inside(origin, self.root):
            return None
        relpath = origin.relative_to(self.root)
        if installed_tree(relpath.parts):
            return None
        rel = relpath.as_posix()
        want = self.files.get(rel)
        if want is None:
            raise CodeRefused(f"{origin} was not hashed when the plan was compiled; recompile the plan")
        loader = _VerifiedSource(origin, want)
        search = module_spec.submodule_search_locations
        return importlib.util.spec_from_file_location(fullname, origin, loader=loader,
                                                      submodule_search_locations=search)  # fmt: skip


_LOCK = threading.RLock()


def load_module(path: Path, root: Path, files: Mapping[str, str], name: str) -> types.ModuleType:
    """Execute the module file ``path`` (under ``root``) from verified source, with every import of a file
    under ``root`` verified against ``files`` too. Raises CodeRefused for an unhashed or changed file."""
    path = path.resolve()
    root = root.resolve()
    if not is_inside(path, root):
        raise CodeRefused(f"{path} is outside its task folder {root}")
    rel = path.relative_to(root).as_posix()
    want = files.get(rel)
    if want is None:
        raise CodeRefused(f"{path} has no recorded sha256")
    guard = _TreeGuard(root, files)
    with _LOCK:
        # modules already imported from this folder (by anything) would bypass the checks: forget them; a
        # module of another folder named like one of this folder's files (``import helper``) would be handed
        # to the hook instead of its own hashed file: set aside while it loads
        _forget(root)
        shadowed = {n: sys.modules.pop(n) for n in _sibling_names(path.parent, root, files) if n in sys.modules}
        module_spec = importlib.util.spec_from_file_location(name, path, loader=_VerifiedSource(path, want))
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.meta_path.insert(0, guard)
        sys.path.insert(0, str(path.parent))
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        finally:
            sys.meta_path.remove(guard)
            try:
                sys.path.remove(str(path.parent))
            except ValueError:
                pass
            # the folder's modules stay reachable from the hook's globals, but not by name: a later load
            # (another task folder with a module of the same name) must not be handed these
            _forget(root)
            sys.modules.update(shadowed)
    return module


def _sibling_names(parent: Path, root: Path, files: Mapping[str, str]) -> list[str]:
    """The top-level module names the recorded files under ``parent`` are imported by (``helper.py`` ->
    ``helper``, ``pkg/__init__.py`` -> ``pkg``)."""
    names = set()
    for rel in files:
        f = root / rel
        if f.suffix == ".py" and is_inside(f, parent):
            names.add(f.relative_to(parent).parts[0].removesuffix(".py"))
    return sorted(names)


def _forget(root: Path) -> None:
    for key, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and is_inside(Path(f).resolve(), root):
            del sys.modules[key]


def module_name_for(path: Path, digest: str) -> str:
    return f"_lmeval_fn_{digest[:16]}_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}"


# lmeval's own task configs (compiler.config.CONF_DIR / "task"); plans may not import the compiler
CONF_TASK_DIR = conf_dir("task")


def default_task_roots() -> list[Path]:
    """Where task folders are looked for after the ones the user names: lmeval's conf/task and lm-eval's
    installed tasks (the two catalogs a task name resolves in besides ``run.include_path``)."""
    roots = [CONF_TASK_DIR]
    lm = lm_eval_tasks_dir()
    if lm is not None:
        roots.append(lm)
    return [r for r in roots if r.is_dir()]


@dataclass(frozen=True)
class Changed:
    """A file of a candidate task folder whose content is not the recorded one."""

    path: Path
    now: str  # its sha256 now ("" when it cannot be read)
    want: str


@dataclass(frozen=True)
class FolderSearch:
    folder: Path | None  # the task folder: every recorded file matches (None when there is none)
    changed: Changed | None  # else the nearest candidate's first mismatch, when one is telling


def _folders(root: Path) -> Iterator[Path]:
    """``root`` and every folder under it, sorted, skipped as ``hash_tree`` skips them."""
    for dirpath, _ in walk_code(root):
        yield Path(dirpath)


def first_mismatch(folder: Path, files: Mapping[str, str]) -> Changed | None:
    """The first recorded file (sorted) under ``folder`` that is missing or not its recorded content."""
    for rel, want in sorted(files.items()):
        f = folder / rel
        try:
            now = sha256_file(f)
        except OSError:
            return Changed(f, "", want)
        if now != want:
            return Changed(f, now, want)
    return None


def find_task_folder(rel: str, files: Mapping[str, str], roots: Sequence[Path],
                     defaults: Sequence[Path] = ()) -> FolderSearch:  # fmt: skip
    """The folder under ``roots`` (then ``defaults``) holding ``rel`` with every file of ``files`` as
    recorded (the first in sorted walk order: all such folders hold the same code). When none does, the
    mismatch to report: a folder whose ``rel`` matches but another file does not; else, under ``roots``
    only, the one folder holding ``rel`` at all (the module itself changed)."""
    want = files[rel]
    module_match: Changed | None = None
    for group, is_default in ((roots, False), (defaults, True)):
        holding: list[Path] = []
        for root in group:
            if not root.is_dir():
                continue
            for d in _folders(root.resolve()):
                f = d / rel
                if not f.is_file() or not is_inside(f.resolve(), d):
                    continue
                holding.append(d)
                try:
                    if sha256_file(f) != want:
                        continue
                except OSError:
                    continue
                bad = first_mismatch(d, files)
                if bad is None:
                    return FolderSearch(d, None)
                module_match = module_match or bad
        if module_match is None and not is_default and len(holding) == 1:
            module_match = first_mismatch(holding[0], files)
    return FolderSearch(None, module_match)
