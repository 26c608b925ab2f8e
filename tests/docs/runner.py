"""The docs' runnable examples: every fenced ``bash`` block right after a ``<!-- runnable -->`` line.

A page's blocks run in order, each in its own ``bash`` (``set -euo pipefail``), in one scratch folder per
page, so a block may use what the blocks before it wrote (a tutorial's plan, then its results). The marker may
name the exit status the block must end with (``<!-- runnable exit=1 -->``: ``lmeval diff`` when the plans
differ); otherwise it is 0. ``lmeval`` is this checkout's (``python -m lmeval`` with the repository first on
``PYTHONPATH``), and the data folder the examples spell ``../shared/data`` is replaced by the test data
(``tests/support.data_dir``), so the pages show what a user types in a checkout.

Run by hand: ``python -m tests.docs.runner [PAGE.md ...]`` (all pages of docs/ when none is named).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
DATA_PLACEHOLDER = "../shared/data"
MARKER = re.compile(r"^<!--\s*runnable(?:\s+exit=(\d+))?\s*-->\s*$")
FENCE = re.compile(r"^```bash\s*$")


@dataclass(frozen=True)
class Example:
    page: str  # path relative to docs/
    line: int  # 1-based line of the block's first command
    code: str
    exit_status: int = 0


@dataclass(frozen=True)
class Outcome:
    example: Example
    status: int
    output: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == self.example.exit_status

    def describe(self) -> str:
        e = self.example
        return (
            f"docs/{e.page}:{e.line}: exit status {self.status}, expected {e.exit_status}\n"
            f"$ {e.code.strip()}\n{self.output[-4000:]}"
        )


def examples(text: str, page: str) -> list[Example]:
    """The runnable blocks of one Markdown page, in order. A marker not followed by a ```bash fence, or a
    fence that never closes, is an error naming the line (a typo must not silently drop an example)."""
    lines = text.splitlines()
    out: list[Example] = []
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            raise ValueError(f"docs/{page}:{i + 1}: a runnable marker must be followed by a ```bash fence")
        body: list[str] = []
        for j in range(i + 2, len(lines)):
            if lines[j].startswith("```"):
                break
            body.append(lines[j])
        else:
            raise ValueError(f"docs/{page}:{i + 2}: the runnable block never closes")
        out.append(Example(page, i + 3, "\n".join(body) + "\n", int(m.group(1) or 0)))
    return out


def all_examples(root: Path = DOCS) -> dict[str, list[Example]]:
    """Every page's runnable blocks, by page (pages without any left out)."""
    pages: dict[str, list[Example]] = {}
    for path in sorted(root.rglob("*.md")):
        page = path.relative_to(root).as_posix()
        found = examples(path.read_text(encoding="utf-8"), page)
        if found:
            pages[page] = found
    return pages


def _env(bindir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    return env


def run_page(blocks: list[Example], workdir: Path, data_dir: Path, timeout: float = 120) -> list[Outcome]:
    """Run one page's blocks in order in ``workdir``; stops at the first block that fails."""
    bindir = workdir / ".bin"
    bindir.mkdir(parents=True, exist_ok=True)
    shim = bindir / "lmeval"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lmeval "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    if not (bindir / "python3").exists():  # the examples' python3 is the one lmeval runs in
        (bindir / "python3").symlink_to(sys.executable)
    env = _env(bindir)
    outcomes: list[Outcome] = []
    for ex in blocks:
        code = "set -euo pipefail\n" + ex.code.replace(DATA_PLACEHOLDER, str(data_dir))
        start = time.monotonic()
        try:
            proc = subprocess.run(["bash", "-c", code], cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=timeout)  # fmt: skip
            status, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as e:
            said = b"".join(x if isinstance(x, bytes) else x.encode() for x in (e.stdout, e.stderr) if x)
            status, output = -1, f"timed out after {timeout} s\n{said.decode(errors='replace')}"
        outcomes.append(Outcome(ex, status, output, time.monotonic() - start))
        if not outcomes[-1].ok:
            break
    return outcomes


def main(argv: list[str]) -> int:
    from tests.support import data_dir

    pages = all_examples()
    if argv:
        wanted = {Path(a).resolve().relative_to(DOCS).as_posix() for a in argv}
        pages = {p: b for p, b in pages.items() if p in wanted}
    bad = 0
    for page, blocks in pages.items():
        with tempfile.TemporaryDirectory(prefix="lmeval-docs-") as tmp:
            for o in run_page(blocks, Path(tmp), data_dir()):
                print(f"{'ok  ' if o.ok else 'FAIL'} {o.seconds:5.1f}s docs/{page}:{o.example.line}")
                if not o.ok:
                    bad += 1
                    print(o.describe())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
