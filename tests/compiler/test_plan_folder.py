"""The default plan folder can never be a source package (issue #23): ``lmeval compile`` from the root of a
checkout writes ``lmeval-plans/<name>-<hash12>.msgpack`` beside the packages, and ``git status --ignored``
shows nothing new inside any of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lmeval.compiler.encode.destination import DEFAULT_PLAN_DIR

REPO = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_default_plan_folder_is_no_python_identifier() -> None:
    assert not DEFAULT_PLAN_DIR.isidentifier() and not (REPO / DEFAULT_PLAN_DIR / "__init__.py").exists()
    assert DEFAULT_PLAN_DIR in (REPO / ".gitignore").read_text(encoding="utf-8")


def test_compile_from_a_checkout_root_writes_nothing_into_a_source_package(tmp_path: Path) -> None:
    copy = tmp_path / "checkout"
    files = _git(REPO, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    copy.mkdir()
    listed = [f for f in files if f and os.path.lexists(REPO / f)]
    subprocess.run(
        ["tar", "-cf", "-", "-C", str(REPO), "--null", "-T", "-"],
        input="\0".join(listed).encode(),
        stdout=open(tmp_path / "c.tar", "wb"),
        check=True,
    )
    subprocess.run(["tar", "-xf", str(tmp_path / "c.tar"), "-C", str(copy)], check=True)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "copy")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "lmeval", "compile", "+task=arith"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    plan = r.stdout.strip().splitlines()[-1]
    assert plan.startswith(f"{DEFAULT_PLAN_DIR}/arith-") and (copy / plan).is_file()
    new = [line[3:] for line in _git(copy, "status", "--porcelain", "--ignored", "-uall").splitlines()]
    packages = {p.parent.name for p in copy.glob("*/__init__.py")}
    assert "plans" in packages and "compiler" in packages
    inside = [p for p in new if p.split("/", 1)[0] in packages]
    assert not inside, inside
    assert new == [plan], new
