"""Where a command may write: never over one of its own inputs (#64). ``lmeval next-turn PLAN RESULTS --out PLAN``
would write stage 2 over the stage-1 plan it reads; ``report -o RUN/manifest.json``, ``judge --out`` naming the
judged plan, ``export-batch --out PLAN`` and ``contamination -o`` over a corpus file the same. Each command names
the files it writes and the inputs it reads, and ``refuse_input_as_output`` refuses, before anything is written,
an output that is an input under another name: the same path, a symlink to it, a hard link (same device and
inode), or a file inside an input folder read whole (a corpus folder). A results directory is read for its own
files only (``run_inputs``), so ``report -o RUN/report.html`` stays allowed."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from lmeval.plans.errors import PlanError, UserError
from lmeval.plans.plan import CHAIN_FILE
from lmeval.plans.results import MANIFEST, part_files, plan_named, read_manifest
from lmeval.plans.scored import REPEATS_PARQUET, RESULTS_JSON, SAMPLES_PARQUET

PathLike = str | os.PathLike[str]
_RUN_FILES = (MANIFEST, RESULTS_JSON, SAMPLES_PARQUET, REPEATS_PARQUET, CHAIN_FILE)


def run_inputs(results_dir: PathLike, plan: PathLike | None = None) -> list[Path]:
    """What a command reading the results directory ``results_dir`` reads of it: its own files (manifest, parts,
    results.json, samples.parquet, repeats.parquet, chain.json) and its plan (``plan`` as ``--plan`` gives it,
    else the one the manifest names: ``plans.results.plan_named``). A manifest that cannot be read names no
    plan (the command itself says why it cannot read the run)."""
    d = Path(results_dir)
    files = [d / n for n in _RUN_FILES] + (part_files(d) if d.is_dir() else [])
    if plan is None:
        try:
            plan = plan_named(d, read_manifest(d).plan_path) or None
        except (PlanError, OSError):
            plan = None
    return files + ([Path(plan)] if plan is not None else [])


def _same(a: PathLike, b: PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either is not there (or not a path): not the same file
        return False


def _inside(path: PathLike, folder: PathLike) -> bool:
    """``path`` (an existing file) lies in the folder ``folder``, symlinks resolved."""
    try:
        if not os.path.isdir(folder) or not os.path.lexists(path):
            return False
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))
    except (OSError, ValueError):
        return False


def input_clash(outputs: Iterable[PathLike], inputs: Iterable[PathLike]) -> tuple[Path, Path] | None:
    """The first (output, input) pair where writing the output would replace the input, or None."""
    ins = [Path(i) for i in inputs]
    for out in outputs:
        for i in ins:
            if _same(out, i) or _inside(out, i):
                return Path(out), i
    return None


def refuse_input_as_output(
    outputs: PathLike | Iterable[PathLike], inputs: Iterable[PathLike], flag: str = "--out"
) -> None:
    """``UserError`` (one line, before anything is written) when a file the command would write (``outputs``:
    one path or several) is one of the files it reads (``inputs``: files, or folders read whole)."""
    outs = [outputs] if isinstance(outputs, str | os.PathLike) else list(outputs)
    clash = input_clash(outs, inputs)
    if clash is not None:
        out, src = clash
        also = "" if str(out) == str(src) else f" ({src})"
        raise UserError(
            f"{flag} {out}: is also an input of this command{also}; writing there would destroy it, so nothing "
            f"was written: give another {flag}"
        )
