"""What the test packages share: the local data, hand-built plan records, and running lm-eval 0.4.13 as
the oracle (the scorer goldens, tests/scorer/make_golden.py, and the end-to-end references,
tests/e2e/lmeval_ref.py and tests/e2e/bos_ref.py).

- ``data_dir()``: the local benchmark data (``$LMEVAL_DATA_DIR``, default ``<repo>/../shared/data``);
  ``jsonl_rows(name, split)``: one split's rows.
- ``instance_record(...)``: an InstanceRecord with its instance id and request hash derived by the contract
  (the plan builders of tests/executor/plantools.py and tests/diff/diff_builders.py).
- ``offline_env(scratch)``: the environment lm-eval runs in: Hugging Face offline, a scratch ``HF_HOME``,
  no tokenizer threads.
- ``run_child(script, spec, scratch)``: run ``python SCRIPT SPEC.json OUT.json`` (a driver's child half)
  from a folder outside any repository (lm-eval runs ``git describe`` in its working directory) in that
  environment; returns OUT.json's path, or raises with the child's stderr.
- ``plain(x)``: lm-eval's results and logged samples as JSON data (numpy scalars and arrays to Python,
  a function to ``{"__function__": qualname}``, anything else that is not JSON to its repr).
- ``row_diffs`` for two results frames (log-likelihoods within a tolerance of ``tests/bounds.py``, where the
  stated bounds and every tolerance derived from them live: ``Tolerance``, ``LOGLIKELIHOOD``, ``SCORES``,
  re-exported here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.bounds import LOGLIKELIHOOD, Tolerance

if TYPE_CHECKING:
    import polars as pl

    from lmeval.plans.plan import InstanceRecord

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    env = os.environ.get("LMEVAL_DATA_DIR")
    return Path(env) if env else (REPO / ".." / "shared" / "data").resolve()


def cli_in_process(*argv: str) -> tuple[int, str, str]:
    """``lmeval ARGV`` run in this process: (exit status, stdout, stderr)."""
    import contextlib
    import io

    from lmeval.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def jsonl_rows(name: str, split: str, limit: int | None = None, start: int = 0) -> list[dict[str, Any]]:
    """Rows ``start`` to ``start + limit`` of ``data_dir()/NAME/SPLIT.jsonl`` (all from ``start`` when no limit)."""
    out: list[dict[str, Any]] = []
    with open(data_dir() / name / f"{split}.jsonl", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i < start or not line.strip():
                continue
            if limit is not None and len(out) >= limit:
                break
            out.append(json.loads(line))
    return out


Ids = tuple[list[int] | None, list[int] | None]  # context ids, continuation ids


def instance_record(task: str, doc_id: int, idx: int, request_type: str, context: str, continuation: str | None = None,
                    generation_kwargs: dict[str, Any] | None = None, ids: Ids = (None, None),
                    repeats: int = 1) -> InstanceRecord:  # fmt: skip
    """An ``InstanceRecord`` whose id and request hash come from ``lmeval.plans.plan.records``."""
    from lmeval.plans.plan import InstanceRecord, instance_id_for, request_hash_of

    context_ids, continuation_ids = ids
    rh = request_hash_of(request_type, context, continuation, generation_kwargs, context_ids, continuation_ids)
    return InstanceRecord(
        instance_id=instance_id_for(task, doc_id, idx),
        task=task,
        doc_id=doc_id,
        idx=idx,
        request_type=request_type,
        context=context,
        continuation=continuation,
        generation_kwargs=generation_kwargs,
        repeats=repeats,
        context_ids=context_ids,
        continuation_ids=continuation_ids,
        request_hash=rh,
    )


def offline_env(scratch: str | Path, drop: tuple[str, ...] = ("VLLM_", "LMEVAL_")) -> dict[str, str]:
    """This process's environment without the variables starting with ``drop``, made offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(Path(scratch) / "hf_home"),
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def run_child(script: str | Path, spec: dict[str, Any], scratch: str | Path, **env_extra: str) -> Path:
    """Run ``python SCRIPT SPEC OUT`` in ``scratch/cwd`` with ``offline_env`` (plus ``env_extra``)."""
    sp, out = Path(scratch) / "spec.json", Path(scratch) / "out.json"
    sp.write_text(json.dumps(spec))
    cwd = Path(scratch) / "cwd"
    cwd.mkdir()
    env = {**offline_env(scratch), "PYTHONPATH": str(REPO), **env_extra}  # the child imports this module
    proc = subprocess.run([sys.executable, str(Path(script).resolve()), str(sp), str(out)], cwd=cwd, env=env,
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"lm-eval run failed (exit {proc.returncode}):\n{proc.stderr[-6000:]}")
    return out


def plain(x: Any) -> Any:
    import numpy as np

    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if callable(x):
        return {"__function__": getattr(x, "__qualname__", str(x))}
    return repr(x)


def row_diffs(a: pl.DataFrame, b: pl.DataFrame, tol: Tolerance = LOGLIKELIHOOD) -> list[dict[str, Any]]:
    """The rows where results frame ``a`` differs from ``b`` (joined on ``instance_id``): a row of one
    missing in the other, any column but ``loglikelihood`` unequal, or log-likelihoods outside ``tol``."""
    rows_b = {r["instance_id"]: r for r in b.iter_rows(named=True)}
    out: list[dict[str, Any]] = []
    seen = set()
    for r in a.iter_rows(named=True):
        seen.add(r["instance_id"])
        other = rows_b.get(r["instance_id"])
        if other is None:
            out.append({"instance_id": r["instance_id"], "missing": "b"})
            continue
        cols = [k for k in r if k != "loglikelihood" and r[k] != other[k]]
        la, lb = r["loglikelihood"], other["loglikelihood"]
        ll_ok = la == lb or (la is not None and lb is not None and tol.close(la, lb))
        if cols or not ll_ok:
            out.append({"instance_id": r["instance_id"], "columns": cols, "a": la, "b": lb})
    out += [{"instance_id": k, "missing": "a"} for k in rows_b if k not in seen]
    return out


def max_ll_delta(a: pl.DataFrame, b: pl.DataFrame) -> float:
    """The largest |loglikelihood difference| between two results frames (joined on ``instance_id``)."""
    j = a.join(b, on="instance_id", suffix="_b")
    d = (j["loglikelihood"] - j["loglikelihood_b"]).abs().max()
    return float(d) if isinstance(d, (int, float)) else 0.0
