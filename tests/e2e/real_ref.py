"""lm-eval 0.4.13 (``--model hf``) on a real model and the task folder of ``real_tasks``, offline, cached.

``reference(model, tasks_dir, runs)`` runs, in one child process (this file as a script) from a scratch
folder outside any repository, what

    lm_eval --model hf --model_args pretrained=DIR,dtype=float32 --device cpu --batch_size 1 \\
        --include_path TASKS --tasks T1,T2 --log_samples [--apply_chat_template --fewshot_as_multiturn]

builds: one ``HFLM`` (batch size 1, so every generation stops at its own stop sequence) and one
``simple_evaluate`` per run. ``runs``: name -> {"tasks": [...], "chat": bool}. Returns per run its results
and logged samples (``doc`` left out). The output is cached under ``$LMEVAL_CACHE/e2e-lmeval/real-*.json``,
keyed by the spec, lm-eval's version, this file, the model files and every file of the task folder;
``LMEVAL_E2E_FRESH=1`` ignores the cache.

    .venv/bin/python tests/e2e/real_ref.py SPEC.json OUT.json     # what ``reference`` runs
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests import support
from tests.e2e.background import beside_env
from tests.e2e.lmeval_ref import _lm_eval_version, _sha_file, cache_root
from tests.support import plain, run_child


def _files_sha(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): _sha_file(p) for p in sorted(folder.rglob("*")) if p.is_file()
            and "__pycache__" not in p.parts}  # fmt: skip


def cache_key(spec: dict[str, Any]) -> str:
    parts = {
        "spec": {k: v for k, v in spec.items() if k not in ("model", "tasks_dir")},
        "lm_eval": _lm_eval_version(),
        "driver": _sha_file(Path(__file__)),
        "oracle": _sha_file(Path(support.__file__)),
        "model": _files_sha(Path(spec["model"])),
        "tasks": _files_sha(Path(spec["tasks_dir"])),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def reference(model: Path, tasks_dir: Path, runs: dict[str, dict[str, Any]], fresh: bool | None = None) -> dict:
    """lm-eval's output per run name; adds ``"cached"`` and ``"seconds"`` (the child's wall time)."""
    spec = {"model": str(model), "tasks_dir": str(tasks_dir), "runs": runs}
    if fresh is None:
        fresh = os.environ.get("LMEVAL_E2E_FRESH") == "1"
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    # the task folder's data paths differ from session to session: key on the files' contents, not paths
    out = root / f"real-{cache_key(spec)}.json"
    if out.is_file() and not fresh:
        return {**json.loads(out.read_text()), "cached": True}
    cpu0 = _children_cpu()
    with tempfile.TemporaryDirectory(prefix="lmeval-real-lm_eval-") as scratch:
        data = json.loads(run_child(__file__, spec, scratch, **beside_env()).read_text())
    data["cpu_seconds"] = round(_children_cpu() - cpu0, 1)  # what it costs on idle cores, whatever the load
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, out)
    return {**data, "cached": False}


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def child(spec_path: str, out_path: str) -> None:
    t0 = time.monotonic()
    from lm_eval.evaluator import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    spec = json.loads(Path(spec_path).read_text())
    tm = TaskManager(include_path=spec["tasks_dir"], include_defaults=False)  # self-contained YAMLs: no built-in index
    lm = HFLM(pretrained=spec["model"], dtype="float32", device="cpu", batch_size=1)
    out: dict[str, Any] = {"lm_eval_version": _lm_eval_version(), "runs": {}}
    for name, run in spec["runs"].items():
        t = time.monotonic()
        chat = bool(run.get("chat"))
        res = simple_evaluate(model=lm, tasks=run["tasks"], log_samples=True, task_manager=tm,
                              apply_chat_template=chat, fewshot_as_multiturn=chat,
                              bootstrap_iters=100000)  # fmt: skip
        assert res is not None
        samples = {t: [{k: plain(v) for k, v in s.items() if k != "doc"} for s in rows]
                   for t, rows in res["samples"].items()}  # fmt: skip
        out["runs"][name] = {
            "results": plain(res["results"]),
            "n-shot": plain(res["n-shot"]),
            "samples": samples,
            "seconds": round(time.monotonic() - t, 1),
        }
    out["seconds"] = round(time.monotonic() - t0, 1)
    Path(out_path).write_text(json.dumps(out))


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
