"""Which of lm-eval's catalog tasks shape their prompts with the global random generators (#25).

A task's prompts depend on ``run.seed_mode`` (compiler/build/seeds.py) when one of the Python functions its YAML
names for a prompt-shaping field (``process_docs``, ``doc_to_text``/``target``/``choice``, ``custom_dataset``,
``gen_prefix``, ``description``, the few-shot config's) draws, directly or through the functions it calls,
from Python's global ``random`` (``random.shuffle``, ``from random import choice``, ...) or numpy's global
generator (``np.random.randint``, a ``Dataset.shuffle()`` without a seed), or a template uses Jinja's
``random`` filter. Scoring-time functions (``process_results``, metrics, filters: ifeval's instruction
builders) do not shape prompts and are not listed. The analysis reads the sources (``ast``); nothing of
lm-eval is imported.

``python -m tests.parity.seeded_hooks`` prints the list in docs/how-to/leaderboard.md (``--all``: every
catalog YAML, slower; the default reads only the YAMLs near a module that draws, and the two agree for lm-eval 0.4.13).
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lmeval.compiler.tasks.functions import FunctionRef

PROMPT_FIELDS = ("custom_dataset", "process_docs", "doc_to_text", "doc_to_target", "doc_to_choice", "gen_prefix",
                 "description")  # fmt: skip
FEWSHOT_FIELDS = ("process_docs", "samples", "doc_to_text", "doc_to_target", "doc_to_choice", "gen_prefix")
# constructors of private generators: seeded by their caller, not by the global seed
_PRIVATE = {"Random", "SystemRandom", "default_rng", "RandomState", "Generator", "SeedSequence", "PCG64", "MT19937",
            "Philox", "SFC64", "BitGenerator"}  # fmt: skip
_JINJA_RANDOM = re.compile(r"\|\s*random\b")


@dataclass(frozen=True)
class Use:
    task: str
    field: str  # e.g. process_docs, fewshot_config.samples
    function: str  # the reference as the YAML writes it (or "template")
    draws: tuple[str, ...]  # e.g. ("random.shuffle",)


class _Module:
    """One source file: its top-level functions, how it names random/numpy, what it imports from siblings."""

    def __init__(self, path: Path, tasks_root: Path) -> None:
        self.path = path
        with warnings.catch_warnings():  # some catalog sources have invalid escape sequences
            warnings.simplefilter("ignore")
            self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.funcs = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.random_mods: set[str] = set()
        self.numpy_mods: set[str] = set()
        self.np_random_mods: set[str] = set()
        self.random_funcs: dict[str, str] = {}  # local name -> random.<fn>
        self.imported: dict[str, tuple[Path, str]] = {}  # local name -> (module file, function)
        self.mod_alias: dict[str, Path] = {}  # local name -> module file
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    if a.name == "random":
                        self.random_mods.add(local)
                    elif a.name == "numpy":
                        self.numpy_mods.add(local)
                    elif a.name == "numpy.random":
                        (self.np_random_mods if a.asname else self.numpy_mods).add(local)
                    elif a.asname and (f := _module_path(a.name, 0, path, tasks_root)) is not None:
                        self.mod_alias[local] = f
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                for a in node.names:
                    local = a.asname or a.name
                    if mod == "random" and node.level == 0:
                        if a.name not in _PRIVATE:
                            self.random_funcs[local] = f"random.{a.name}"
                    elif mod == "numpy" and a.name == "random" and node.level == 0:
                        self.np_random_mods.add(local)
                    elif (f := _module_path(mod, node.level, path, tasks_root)) is not None:
                        self.imported[local] = (f, a.name)
                    elif f := _module_path(f"{mod}.{a.name}" if mod else a.name, node.level, path, tasks_root):
                        self.mod_alias[local] = f

    def draws_in(self, node: ast.AST) -> tuple[set[str], list[tuple[Path, str]]]:
        """(global draws made in ``node``, the functions it calls that may make more)."""
        draws: set[str] = set()
        calls: list[tuple[Path, str]] = []
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            f = n.func
            if isinstance(f, ast.Name):
                if f.id in self.random_funcs:
                    draws.add(self.random_funcs[f.id])
                elif f.id in self.funcs:
                    calls.append((self.path, f.id))
                elif f.id in self.imported:
                    calls.append(self.imported[f.id])
            elif isinstance(f, ast.Attribute):
                v = f.value
                if isinstance(v, ast.Name) and v.id in self.random_mods and f.attr not in _PRIVATE:
                    draws.add(f"random.{f.attr}")
                elif isinstance(v, ast.Name) and v.id in self.np_random_mods and f.attr not in _PRIVATE:
                    draws.add(f"numpy.random.{f.attr}")
                elif (
                    isinstance(v, ast.Attribute)
                    and v.attr == "random"
                    and isinstance(v.value, ast.Name)
                    and v.value.id in self.numpy_mods
                    and f.attr not in _PRIVATE
                ):
                    draws.add(f"numpy.random.{f.attr}")
                elif isinstance(v, ast.Name) and v.id in self.mod_alias:
                    calls.append((self.mod_alias[v.id], f.attr))
                elif f.attr == "shuffle" and not n.args and not {k.arg for k in n.keywords} & {"seed", "generator"}:
                    draws.add("Dataset.shuffle (no seed: numpy's global generator)")
        return draws, calls


def _module_path(mod: str, level: int, here: Path, tasks_root: Path) -> Path | None:
    """The file of an imported module that lives in lm-eval's task folders (relative, same-folder or
    ``lm_eval.tasks.*``), else None (a library: not followed)."""
    parts = mod.split(".") if mod else []
    if level:
        base = here.parent
        for _ in range(level - 1):
            base = base.parent
    elif parts[:2] == ["lm_eval", "tasks"]:
        base, parts = tasks_root, parts[2:]
    else:
        base = here.parent
    if not parts:
        return None
    cand = base.joinpath(*parts[:-1], parts[-1] + ".py")
    return cand if cand.is_file() else None


@cache
def _module(path: Path, tasks_root: Path) -> _Module | None:
    try:
        return _Module(path, tasks_root)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def function_draws(path: Path, name: str, tasks_root: Path) -> tuple[str, ...]:
    """Every global draw ``path``'s function ``name`` can make, following calls into lm-eval's task modules."""
    seen: set[tuple[Path, str]] = set()
    todo = [(path, name)]
    draws: set[str] = set()
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        m = _module(key[0], tasks_root)
        if m is None or key[1] not in m.funcs:
            continue
        d, calls = m.draws_in(m.funcs[key[1]])
        draws |= d
        todo += calls
    return tuple(sorted(draws))


def _locate(ref: FunctionRef, tasks_root: Path) -> tuple[Path, str] | None:
    mod, _, attr = ref.qualname.rpartition(".")
    if not mod:
        return None
    if ref.base_dir is not None:
        cand = Path(ref.base_dir).joinpath(*mod.split(".")[:-1], mod.split(".")[-1] + ".py")
        if cand.is_file():
            return cand, attr
    if mod.startswith("lm_eval.tasks."):
        cand = tasks_root.joinpath(*mod.split(".")[2:-1], mod.split(".")[-1] + ".py")
        if cand.is_file():
            return cand, attr
    return None


def _fields(cfg: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for k in PROMPT_FIELDS:
        if k in cfg:
            yield k, cfg[k]
    fs = cfg.get("fewshot_config")
    if isinstance(fs, dict):
        for k in FEWSHOT_FIELDS:
            if k in fs:
                yield f"fewshot_config.{k}", fs[k]


def task_uses(name: str, cfg: dict[str, Any], tasks_root: Path) -> list[Use]:
    out = []
    for field, value in _fields(cfg):
        if isinstance(value, FunctionRef):
            loc = _locate(value, tasks_root)
            draws = function_draws(*loc, tasks_root) if loc is not None else ()
            if draws:
                out.append(Use(name, field, value.qualname, draws))
        elif isinstance(value, str) and _JINJA_RANDOM.search(value):
            out.append(Use(name, field, "template", ("jinja random filter",)))
    return out


def _drawing_modules(tasks_root: Path) -> list[Path]:
    out = []
    for p in sorted(tasks_root.rglob("*.py")):
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "random" not in text and "shuffle" not in text:
            continue
        m = _module(p, tasks_root)
        if m is not None and any(function_draws(p, f, tasks_root) for f in m.funcs):
            out.append(p)
    return out


def scan(tasks_root: Path | None = None, everything: bool = False) -> list[Use]:
    """Every catalog task's prompt-shaping functions that draw from the global generators, by task name."""
    from lmeval.compiler.tasks.lm_eval_catalog import catalog
    from lmeval.compiler.tasks.yamls import load_yaml

    cat = catalog()
    assert cat is not None, "lm-eval is not installed"
    root = tasks_root or cat.root
    # a hook's YAML (or the template it includes) lives beside its module; a YAML that includes a template
    # from a sibling folder sits under the module folder's parent (unless that is the catalog's root)
    near = [m.parent.parent if m.parent.parent != root else m.parent for m in _drawing_modules(root)]
    uses: list[Use] = []
    memo: dict[Path, Any] = {}
    prefixes = tuple(f"{d}/" for d in near)
    for name, e in sorted(cat.index.entries.items()):
        if e.kind != "task" or e.path is None:
            continue
        if not everything and not str(e.path).startswith(prefixes):
            continue
        try:
            cfg = load_yaml(e.path, memo=memo)
        except Exception:  # noqa: BLE001 - lm-eval skips unreadable YAMLs too
            continue
        uses += task_uses(name, cfg, root)
    return uses


def render(uses: list[Use], tasks_root: Path) -> str:
    """The docs' list (docs/how-to/leaderboard.md): one line per folder and hook, its task names."""
    by: dict[tuple[str, str, str, tuple[str, ...]], list[str]] = {}
    from lmeval.compiler.tasks.lm_eval_catalog import catalog

    cat = catalog()
    assert cat is not None
    for u in uses:
        e = cat.index.entries[u.task]
        assert e.path is not None
        folder = e.path.parent.relative_to(tasks_root).as_posix()
        by.setdefault((folder, u.field, u.function, u.draws), []).append(u.task)
    lines = []
    for (folder, field, fn, draws), tasks in sorted(by.items()):
        names = ", ".join(f"`{t}`" for t in sorted(tasks))
        lines.append(f"- `{folder}` ({len(tasks)}): {names}; `{field}` → `{fn}` ({', '.join(draws)})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from lmeval.compiler.tasks.lm_eval_catalog import catalog

    cat = catalog()
    if cat is None:
        print("lm-eval is not installed", file=sys.stderr)
        return 2
    print(render(scan(everything="--all" in argv), cat.root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
