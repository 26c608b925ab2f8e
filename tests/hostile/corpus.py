"""The hostile-input corpus: each case builds a hostile input and names the ``lmeval`` command to run on it.

A case is a function ``(tmp, base) -> Case`` registered with ``@case(family)``; ``base`` holds what many cases
share (a compiled plan, its results directory, a small task folder). ``tests/hostile/test_corpus.py`` runs
every command as a subprocess, several at a time, and checks: the expected exit status (2, or 1 where
``lmeval validate`` reports a rule on stdout), exactly one line on stderr naming the file, no traceback, and
that nothing already written changed (``keep``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("LMEVAL_DATA_DIR", REPO / ".." / "shared" / "data")).resolve()
PY = sys.executable
FAKE = "model.backend=fake"
IS_ROOT = os.geteuid() == 0


@dataclass
class Case:
    argv: list[str]  # after `python -m lmeval`
    needles: tuple[str, ...]  # substrings of the one stderr line (or of stdout for validate's rc 1)
    rc: int = 2
    keep: list[Path] = field(default_factory=list)  # files/dirs that must be byte-identical afterwards
    absent: list[Path] = field(default_factory=list)  # paths that must not exist afterwards
    shell: str | None = None  # run through `sh -c` in a mount namespace (read-only / full file systems)
    timeout: float = 60.0


@dataclass
class Base:
    plan: Path  # arith, 4 docs, compiled
    results: Path  # executed with the fake backend (not scored)
    tasks: Path  # a folder with one lm-eval task YAML `mini` reading <data>/mini/test.jsonl
    data: Path


Builder = Callable[[Path, Base], Case]
CASES: dict[str, tuple[str, Builder]] = {}


def case(family: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        CASES[fn.__name__] = (family, fn)
        return fn

    return register


def env() -> dict[str, str]:
    e = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    e.pop("LMEVAL_EXECUTOR_FAULT", None)
    return e


def lmeval(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "lmeval", *argv], env=env(), cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def snapshot(p: Path) -> dict[str, bytes]:
    if p.is_file():
        return {"": p.read_bytes()}
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file() and f.name != ".lock"}


def copytree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# --------------------------------------------------------------------------------------------- helpers

MINI_YAML = """task: mini
dataset_path: mini
test_split: test
output_type: generate_until
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: "{{answer}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 8
metric_list:
  - metric: exact_match
"""
MINI_ROWS = [{"question": f"{i} + 1", "answer": str(i + 1)} for i in range(3)]


def task_dir(tmp: Path, yaml_text: str, name: str = "t.yaml", extra: dict[str, str] | None = None) -> Path:
    d = tmp / "tasks"
    d.mkdir()
    (d / name).write_text(yaml_text, encoding="utf-8")
    for n, text in (extra or {}).items():
        (d / n).write_text(text, encoding="utf-8")
    return d


def compile_task(d: Path, task: str, data: Path, tmp: Path) -> list[str]:
    return [
        "compile",
        f"run.include_path={d}",
        f"run.tasks=[{task}]",
        f"run.data_dir={data}",
        "--out",
        str(tmp / "out.msgpack"),
    ]


def data_dir_with(tmp: Path, lines: list[str] | bytes) -> Path:
    d = tmp / "data"
    (d / "mini").mkdir(parents=True)
    body = lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode("utf-8")
    (d / "mini" / "test.jsonl").write_bytes(body)
    return d


def row_case(tmp: Path, base: Base, bad_line: str, *needles: str) -> Case:
    good = [json.dumps(r) for r in MINI_ROWS]
    data = data_dir_with(tmp, [good[0], bad_line, good[1]])
    path = data / "mini" / "test.jsonl"
    return Case(
        compile_task(base.tasks, "mini", data, tmp),
        (str(path), ":2", "task mini", *needles),
        absent=[tmp / "out.msgpack"],
    )


def spec_line(**over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "task_id": "t1",
        "category": "arithmetic",
        "prompt": "What is 2+2?",
        "targets": ["4"],
        "metric_name": "exact_match",
        "post_process": "strip_whitespace",
    }
    rec.update(over)
    return rec


def spec_file(tmp: Path, bad: str) -> Path:
    p = tmp / "spec.jsonl"
    p.write_text(json.dumps(spec_line()) + "\n" + bad + "\n", encoding="utf-8")
    return p


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def manifest_case(tmp: Path, base: Base, text: bytes | None, *needles: str, cmd: str = "score") -> Case:
    r = copytree(base.results, tmp / "r")
    m = r / "manifest.json"
    if text is not None:
        m.write_bytes(text)
    argv = ["score", str(r), "--plan", str(base.plan), "--quiet"] if cmd == "score" else []
    if cmd == "execute":
        argv = ["execute", str(base.plan), FAKE, "--out", str(r), "--no-progress"]
    if cmd == "merge":
        argv = ["merge", str(r), str(copytree(base.results, tmp / "r2")), "--out", str(tmp / "merged")]
    return Case(argv, ("manifest", *needles), keep=[r], absent=[r / "results.json", tmp / "merged"])


def forged_manifest(base: Base, **over: Any) -> bytes:
    m = json.loads((base.results / "manifest.json").read_text(encoding="utf-8"))
    m.update(over)
    return json.dumps(m).encode()


def forge_plan(src: Path, dst: Path, edit: Callable[[Any], Any]) -> Path:
    """A re-sealed copy of ``src`` whose instances went through ``edit`` (hashes recomputed: a forger can)."""
    from lmeval.plans.plan import InstanceRecord, PlanReader, write_plan
    from lmeval.plans.plan.io import with_derived

    with PlanReader(src) as r:
        header, recs = r.header, list(r)
    out = []
    for rec in recs:
        if isinstance(rec, InstanceRecord):
            rec = with_derived(replace(edit(rec), request_hash=""))  # the plan's own rule recomputes it
        out.append(rec)
    write_plan(dst, header, out)
    return dst


def mount_shell(target: Path, how: str, cmd: list[str]) -> str:
    """A shell line (run in a fresh mount namespace) that makes ``target`` read-only (``ro``: bind mount,
    so its content stays) or a full 256 KiB tmpfs (``full``: its content copied in and the rest filled),
    then runs ``cmd``; for ``full`` the content is copied back to ``target.after`` for the checks."""
    import shlex

    q = shlex.quote
    if cmd[0] == "lmeval":
        cmd = [PY, "-m", "lmeval", *cmd[1:]]
    line = " ".join(q(c) for c in cmd)
    t = q(str(target))
    if how == "ro":
        return f"mount --bind {t} {t} && mount -o remount,bind,ro {t} && {line}"
    after = q(str(target) + ".after")
    return (
        f"cp -a {t} {t}.src && mount -t tmpfs -o size=256k tmpfs {t} && cp -a {t}.src/. {t}/ && "
        f"(dd if=/dev/zero of={t}/.filler bs=4k >/dev/null 2>&1; true) && "
        f"{line}; rc=$?; rm -f {t}/.filler; mkdir -p {after} && cp -a {t}/. {after}/; exit $rc"
    )
