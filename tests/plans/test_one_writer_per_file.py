"""One writer per file of the contract: every write of a file the contract names (``RESULTS_JSON``, ``MANIFEST``,
``SAMPLES_PARQUET``, ``JUDGE_JSON``, ... and their literal names) in product code, found by reading the source
(AST), comes from exactly one function. A planted second writer of results.json fails the check."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOT_PRODUCT = {"tests", "bench", "docs", "conf", "site"}
FILE_NAME = re.compile(r"[\w.-]+\.(json|jsonl|parquet|msgpack)")
PATH_FIRST = {"write_atomic", "write_json_atomic", "write_parquet", "write_csv", "write_ndjson", "write_json"}
PATH_IS_RECEIVER = {"write_text", "write_bytes"}
COPY_TO = {"copy", "copy2", "copyfile", "move", "replace", "rename"}  # os.replace(src, dst), shutil.copy(src, dst)


def product_sources() -> dict[str, str]:
    """Every product module: relative path -> source."""
    out = {}
    for top in sorted(p for p in REPO.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        if top.name in NOT_PRODUCT:
            continue
        for f in sorted(top.rglob("*.py")):
            out[f.relative_to(REPO).as_posix()] = f.read_text(encoding="utf-8")
    return out


def contract_files(sources: dict[str, str]) -> dict[str, str]:
    """The contract's file-name constants: module-level ``NAME = "file.json"`` in plans/ -> the file name."""
    names = {}
    for path, src in sources.items():
        if not path.startswith("plans/"):
            continue
        for node in ast.parse(src).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                value = node.value.value
                if isinstance(value, str) and FILE_NAME.fullmatch(value):
                    names.update({t.id: value for t in node.targets if isinstance(t, ast.Name) and t.id.isupper()})
    return names


def _bodies(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """Qualified function name (``<module>`` for module level) -> the nodes of its own body (nested functions
    separately, lambdas its own): one walk of the tree."""
    out: dict[str, list[ast.AST]] = {}

    def visit(node: ast.AST, qual: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, prefix + child.name, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, qual, prefix + child.name + ".")
            else:
                out.setdefault(qual, []).append(child)
                visit(child, qual, prefix)

    visit(tree, "<module>", "")
    return out


def _write_targets(call: ast.Call) -> list[ast.expr]:
    """The path(s) a call writes to, when it is a write."""
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if name in PATH_FIRST and call.args:
        return [call.args[0]]
    if name in PATH_IS_RECEIVER and isinstance(f, ast.Attribute):
        return [f.value]
    if name in COPY_TO:
        if len(call.args) >= 2:
            return [call.args[1]]  # os.replace(src, dst), shutil.copy(src, dst)
        if len(call.args) == 1 and isinstance(f, ast.Attribute):
            return [call.args[0]]  # Path(src).replace(dst)
    if name == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if isinstance(f, ast.Attribute) and call.args:  # Path.open(mode)
            mode = call.args[0]
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
            return [f.value if isinstance(f, ast.Attribute) else call.args[0]]
    return []


def writers(sources: dict[str, str]) -> dict[str, set[str]]:
    """Contract file name -> the functions (``module.py:qualname``) whose code writes it."""
    files = contract_files(sources)
    out: dict[str, set[str]] = {name: set() for name in files.values()}

    def mentioned(expr: ast.AST, local: dict[str, set[str]]) -> set[str]:
        found: set[str] = set()
        for n in ast.walk(expr):
            if isinstance(n, ast.Name):
                found |= {files[n.id]} if n.id in files else local.get(n.id, set())
            elif isinstance(n, ast.Attribute) and n.attr in files:
                found.add(files[n.attr])
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                found |= {f for f in files.values() if n.value == f or n.value.endswith("/" + f)}
        return found

    for path, src in sources.items():
        if not any(k in src for k in [*files, *files.values()]):
            continue  # names no contract file: writes none
        for qual, nodes in _bodies(ast.parse(src)).items():
            local: dict[str, set[str]] = {}
            assigns = [n for n in nodes if isinstance(n, ast.Assign)]
            for _ in range(2):  # a name bound from a name bound from a file name
                for a in assigns:
                    names = mentioned(a.value, local)
                    for t in a.targets if names else []:
                        if isinstance(t, ast.Name):
                            local[t.id] = local.get(t.id, set()) | names
            for c in nodes:
                if isinstance(c, ast.Call):
                    for target in _write_targets(c):
                        for name in mentioned(target, local):
                            out[name].add(f"{path}:{qual}")
    return out


def problems(found: dict[str, set[str]]) -> list[str]:
    return [f"{f}: written by {len(w)} functions ({', '.join(sorted(w))})" for f, w in found.items() if len(w) > 1]


def test_every_contract_file_has_one_writer() -> None:
    found = writers(product_sources())
    assert problems(found) == []
    # the scan sees the writers it should: it cannot pass by finding nothing
    assert found["results.json"] == {"plans/scored/files.py:write_results"}
    assert found["samples.parquet"] == {"plans/scored/files.py:write_scored"}
    assert found["manifest.json"] == {"plans/results/manifest.py:write_manifest"}
    assert found["judge.json"] == {"plans/vocab/judging.py:write_grades"}
    assert found["repeats.parquet"] == {"plans/scored/repeats.py:write_repeats"}


PLANTED = {
    "constant": (
        "from pathlib import Path\nfrom lmeval.common import write_atomic\n"
        "from lmeval.plans.scored.files import RESULTS_JSON\n"
        "def sneak(d, text):\n    write_atomic(Path(d) / RESULTS_JSON, lambda f: f.write(text))\n"
    ),
    "literal through a name": (
        "import os\ndef sneak(d, text):\n    p = os.path.join(d, 'results.json')\n    tmp = p + '.tmp'\n"
        "    with open(tmp, 'w') as f:\n        f.write(text)\n    os.replace(tmp, p)\n"
    ),
    "path method": "from pathlib import Path\nclass Run:\n    def save(self, text):\n"
    "        (Path(self.d) / 'results.json').write_text(text)\n",
}


def test_a_planted_second_writer_of_results_json_fails() -> None:
    for how, src in PLANTED.items():
        found = writers({**product_sources(), "plans/sneak.py": src})
        bad = problems(found)
        assert len(bad) == 1 and bad[0].startswith("results.json: written by 2 functions"), how
        assert "plans/scored/files.py:write_results" in bad[0] and "plans/sneak.py:" in bad[0], how
