"""Running ``lmeval`` with a plugin registered in its process, and the hostile corpus's checks on the outcome.

A plugin registers from its own module (``register_metric``, ``register_backend``) before ``lmeval`` runs; the
corpus runs ``python -m lmeval``, which imports no plugin, so these cases run ``python -c`` with a two-line
wrapper instead: import the plugin module written at test time (from a folder put first on ``sys.path``), then
``lmeval.cli.entry`` on the rest of the command line, the real CLI path."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.hostile.corpus import PY, env, snapshot

__all__ = ["assert_one_line", "lmeval_with", "snapshot", "write_plugin"]

WRAPPER = (
    "import importlib, sys\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "importlib.import_module(sys.argv.pop(1))\n"
    "from lmeval.cli import entry\n"
    "entry()\n"
)


def write_plugin(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return folder


def lmeval_with(plugin_dir: Path, module: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lmeval ARGV`` in a fresh process in which ``module`` (a file of ``plugin_dir``) was imported first."""
    return subprocess.run(
        [PY, "-c", WRAPPER, str(plugin_dir), module, *argv],
        env=env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line(p: subprocess.CompletedProcess[str], command: str, *needles: str) -> str:
    """The corpus's rule: exit status 2, one stderr line ``lmeval COMMAND: error: ...`` holding every needle,
    no traceback anywhere."""
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-3000:]
    assert p.returncode == 2, f"exit {p.returncode}: {p.stdout[-800:]!r} {p.stderr[-800:]!r}"
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr[-3000:]
    assert lines[0].startswith(f"lmeval {command}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]
