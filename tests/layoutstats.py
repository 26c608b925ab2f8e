"""The shape of the product code, per package (#52's closing figures): modules, lines, faces, import arrows and
floors, the largest modules and the ``# fmt: skip`` count.

``python -m tests.layoutstats [--json]`` from the repository root. Arrows are module-to-module imports read
through the faces (tests/importgraph.py, the graph the circle rule walks), counted from the importing package;
floors are the length of the longest import chain that stays inside the package (1: no module of the package
imports another one of it).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from tests import importgraph

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("common", "plans", "compiler", "executor", "scorer", "diff", "contamination", "lock", "report", "lmeval")
FMT_SKIP = "# fmt: skip"


@dataclass(frozen=True)
class PackageStats:
    package: str
    modules: int
    lines: int
    faces: int
    face_lines: int
    arrows: int  # imports from this package's modules to other lmeval modules
    arrows_inside: int  # of which to modules of the same package
    floors: int  # the longest import chain inside the package
    fmt_skip: int


def _files(pkg: str) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirs, names in os.walk(ROOT / pkg):
        dirs[:] = sorted(d for d in dirs if not (Path(dirpath) / d).is_symlink() and d != "__pycache__")
        out += [Path(dirpath) / n for n in sorted(names) if n.endswith(".py")]
    return out


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts[0] == "lmeval" else ".".join(["lmeval", *parts])


def _package_of(module: str) -> str:
    head = module.split(".")[1] if module.count(".") else "lmeval"
    return head if head in PACKAGES else "lmeval"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _floors(graph: dict[str, set[str]], members: set[str]) -> int:
    @cache
    def depth(node: str) -> int:
        return 1 + max((depth(d) for d in graph.get(node, ()) if d in members), default=0)

    return max((depth(m) for m in members), default=0)


def collect(root: Path = ROOT) -> tuple[list[PackageStats], list[tuple[int, str]]]:
    files = {pkg: _files(pkg) for pkg in PACKAGES}
    named = {_module_name(p): p for fs in files.values() for p in fs}
    graph = importgraph.edges(importgraph.read_modules(named.items()))
    stats = []
    for pkg, fs in files.items():
        members = {_module_name(p) for p in fs}
        arrows = [(m, d) for m in members for d in graph.get(m, ())]
        stats.append(
            PackageStats(
                package=pkg,
                modules=len(fs),
                lines=sum(_lines(p) for p in fs),
                faces=sum(p.name == "__init__.py" for p in fs),
                face_lines=sum(_lines(p) for p in fs if p.name == "__init__.py"),
                arrows=len(arrows),
                arrows_inside=sum(d in members for _, d in arrows),
                floors=_floors(graph, members),
                fmt_skip=sum(p.read_text(encoding="utf-8").count(FMT_SKIP) for p in fs),
            )
        )
    largest = sorted(((_lines(p), str(p.relative_to(root))) for p in named.values()), reverse=True)
    return stats, largest


def fmt_skips_everywhere(root: Path = ROOT) -> dict[str, int]:
    """``# fmt: skip`` per top-level folder, tests and bench included."""
    out: dict[str, int] = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[0].startswith(".") or "site-packages" in rel.parts:
            continue
        n = path.read_text(encoding="utf-8", errors="replace").count(FMT_SKIP)
        if n:
            out[rel.parts[0]] = out.get(rel.parts[0], 0) + n
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--top", type=int, default=10, help="how many of the largest modules to list")
    args = ap.parse_args()
    stats, largest = collect()
    skips = fmt_skips_everywhere()
    if args.json:
        print(json.dumps({"packages": [asdict(s) for s in stats], "largest": largest[: args.top], "fmt_skip": skips}))
        return
    cols = ("package", "modules", "lines", "faces", "face_lines", "arrows", "arrows_inside", "floors", "fmt_skip")
    print(" | ".join(cols))
    for s in [*stats]:
        print(" | ".join(str(getattr(s, c)) for c in cols))
    total = [sum(getattr(s, c) for s in stats) for c in cols[1:]]
    print(" | ".join(["all", *map(str, total[:-2]), "-", str(total[-1])]))
    print("largest:", ", ".join(f"{p} {n}" for n, p in largest[: args.top]))
    print("fmt: skip:", ", ".join(f"{k} {v}" for k, v in skips.items()), f"(all {sum(skips.values())})")


if __name__ == "__main__":
    main()
