"""Run lm-evaluation-harness (``--model hf``) on the tiny model and local data, offline, with a result cache.

``reference(spec)`` returns lm-eval's aggregate results and per-sample outputs for a set of tasks. It runs
lm-eval 0.4.13 in a child process (this file as a script) from a scratch directory outside any repository,
with ``HF_HUB_OFFLINE=1``, ``HF_DATASETS_OFFLINE=1`` and a scratch ``HF_HOME``. lm-eval's own task YAMLs are
copied, renamed ``e2e_<task>`` (so they cannot collide with the built-in ones) and pointed at the local JSONL
files (``dataset_path: json``, ``dataset_name: null``, ``dataset_kwargs.data_files``); each gets the
``num_fewshot`` the spec asks for written in explicitly. A YAML's ``!function`` entries stay tags, its sibling
Python files are copied beside it; a split the local data lacks is dropped (winogrande and boolq have only
``validation`` locally: 0-shot); boolq's local data (google/boolq) gets SuperGLUE's ``label`` from ``answer``
in a ``process_docs`` (what ``compiler/tasklib/boolq.py`` does on our side).

The output is cached as JSON under ``$LMEVAL_CACHE/e2e-lmeval/`` keyed by a hash of the spec, lm-eval's
version, the model files, the data files and this file; ``LMEVAL_E2E_FRESH=1`` ignores the cache.

    .venv/bin/python tests/e2e/lmeval_ref.py SPEC.json OUT.json     # what ``reference`` runs
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
from tests.support import data_dir, plain, run_child

REPO = Path(__file__).resolve().parents[2]

# lm-eval task -> (path of its YAML inside lm_eval/tasks, local data subdirectory, splits the YAML uses)
TASK_SOURCES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "arc_easy": ("arc/arc_easy.yaml", "arc_easy", ("train", "validation", "test")),
    "arc_challenge": ("arc/arc_challenge.yaml", "arc_challenge", ("train", "validation", "test")),
    "gsm8k": ("gsm8k/gsm8k.yaml", "gsm8k", ("train", "test")),
    "winogrande": ("winogrande/default.yaml", "winogrande", ("validation",)),
    "boolq": ("super_glue/boolq/default.yaml", "boolq", ("validation",)),
}
SPLIT_KEYS = ("training_split", "validation_split", "test_split", "fewshot_split")
BOOLQ_DOCS = '''"""google/boolq's rows as SuperGLUE's: ``label`` (0/1) from ``answer`` (a boolean)."""


def process_docs(dataset):
    return dataset.map(lambda d: {"label": int(bool(d["answer"]))})
'''
FUNCTION = "!function "
MMLU_SUBJECTS = ("abstract_algebra", "anatomy", "astronomy", "college_biology", "high_school_geography",
                 "marketing")  # fmt: skip
TASK_SOURCES.update({f"mmlu_{s}": (f"mmlu/default/mmlu_{s}.yaml", f"mmlu/{s}", ("dev", "test")) for s in MMLU_SUBJECTS})
PREFIX = "e2e_"


def cache_root() -> Path:
    return Path(os.environ.get("LMEVAL_CACHE", Path.home() / ".cache" / "lmeval")) / "e2e-lmeval"


def _sha_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _lm_eval_version() -> str:
    from importlib.metadata import version

    return version("lm_eval")


def cache_key(spec: dict[str, Any]) -> str:
    """Hash of everything lm-eval's output depends on."""
    parts: dict[str, Any] = {
        "spec": spec,
        "lm_eval": _lm_eval_version(),
        "driver": _sha_file(Path(__file__)),
        "oracle": _sha_file(Path(support.__file__)),
    }
    model = Path(spec["model"])
    parts["model"] = {p.name: _sha_file(p) for p in sorted(model.iterdir()) if p.is_file()}
    d = Path(spec["data_dir"])
    parts["data"] = {
        f"{sub}/{s}": _sha_file(d / sub / f"{s}.jsonl")
        for t in spec["tasks"]
        for _, sub, splits in [TASK_SOURCES[t]]
        for s in splits
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def make_spec(
    tasks: dict[str, dict[str, int]],
    gen_kwargs: dict[str, Any] | None = None,
    batch_size: int = 8,
    model: str | None = None,
) -> dict[str, Any]:
    """``tasks``: name -> {"limit": N, "num_fewshot": K}."""
    if model is None:
        sys.path.insert(0, str(REPO))
        from lmeval.common.tinymodel import ensure_tiny_model

        model = str(ensure_tiny_model())
    unknown = sorted(set(tasks) - set(TASK_SOURCES))
    if unknown:
        raise ValueError(f"no local-data recipe for lm-eval task(s) {unknown}")
    return {
        "tasks": {t: {"limit": int(v["limit"]), "num_fewshot": int(v["num_fewshot"])} for t, v in tasks.items()},
        "gen_kwargs": gen_kwargs or None,
        "batch_size": batch_size,
        "model": model,
        "data_dir": str(data_dir()),
    }


def reference(spec: dict[str, Any], fresh: bool | None = None) -> dict[str, Any]:
    """lm-eval's output for ``spec`` (cached). Adds ``"cached": bool`` and ``"cache_file"``."""
    if fresh is None:
        fresh = os.environ.get("LMEVAL_E2E_FRESH") == "1"
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    out = root / f"{cache_key(spec)}.json"
    if out.is_file() and not fresh:
        data = json.loads(out.read_text())
        data["cached"] = True
        data["cache_file"] = str(out)
        return data
    with tempfile.TemporaryDirectory(prefix="lmeval-e2e-lm_eval-") as scratch:
        tmp_out = run_child(__file__, spec, scratch)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(tmp_out.read_text())
        os.replace(tmp, out)
    data = json.loads(out.read_text())
    data["cached"] = False
    data["cache_file"] = str(out)
    return data


# --- child process ------------------------------------------------------------------------------------------


def write_task_yamls(spec: dict[str, Any], dest: Path) -> None:
    """lm-eval's own YAMLs, renamed and pointed at local JSONL files, with an explicit num_fewshot."""
    import re
    import shutil

    import lm_eval
    import yaml

    class Loader(yaml.SafeLoader):  # keeps ``!function module.name`` as that text
        pass

    Loader.add_constructor("!function", lambda loader, node: FUNCTION + str(loader.construct_scalar(node)))
    tasks_dir = Path(lm_eval.__file__).parent / "tasks"
    d = Path(spec["data_dir"])
    for name, opts in spec["tasks"].items():
        rel, sub, splits = TASK_SOURCES[name]
        for py in (tasks_dir / rel).parent.glob("*.py"):
            shutil.copy(py, dest / py.name)
        cfg = yaml.load((tasks_dir / rel).read_text(), Loader=Loader)  # noqa: S506 (a SafeLoader)
        if "include" in cfg:  # arc_challenge: include arc_easy.yaml, then its own keys
            base = yaml.safe_load((tasks_dir / rel).parent.joinpath(cfg.pop("include")).read_text())
            cfg = {**base, **cfg}
        cfg["task"] = PREFIX + name
        cfg.pop("tag", None)
        cfg["dataset_path"] = "json"
        cfg["dataset_name"] = None
        cfg["dataset_kwargs"] = {"data_files": {s: str(d / sub / f"{s}.jsonl") for s in splits}}
        cfg["num_fewshot"] = int(opts["num_fewshot"])
        for key in SPLIT_KEYS:
            if cfg.get(key) is not None and cfg[key] not in splits:
                cfg[key] = None
        if name == "boolq":
            (dest / "boolq_local.py").write_text(BOOLQ_DOCS)
            cfg["process_docs"] = FUNCTION + "boolq_local.process_docs"
        text = yaml.safe_dump(cfg, sort_keys=False)
        text = re.sub(r"'" + FUNCTION + r"([\w.]+)'", FUNCTION + r"\1", text)
        (dest / f"{PREFIX}{name}.yaml").write_text(text)


def child(spec_path: str, out_path: str) -> None:
    t0 = time.monotonic()
    spec = json.loads(Path(spec_path).read_text())
    import lm_eval
    from lm_eval.evaluator import simple_evaluate
    from lm_eval.tasks import TaskManager

    inc = Path(out_path).parent / "tasks"
    inc.mkdir()
    write_task_yamls(spec, inc)
    from lm_eval.models.huggingface import HFLM

    # what `lm_eval --model hf --model_args pretrained=DIR,dtype=float32 --device cpu --batch_size 8` builds
    lm = HFLM(pretrained=spec["model"], dtype="float32", device="cpu", batch_size=spec["batch_size"])
    # only the copied YAMLs: indexing lm-eval's ~10k built-in task files costs ~12 s CPU and finds nothing used
    tm = TaskManager(include_path=str(inc), include_defaults=False)
    by_limit: dict[int, list[str]] = {}
    for t, opts in spec["tasks"].items():
        by_limit.setdefault(int(opts["limit"]), []).append(t)
    merged: dict[str, dict[str, Any]] = {"results": {}, "n-shot": {}, "n-samples": {}, "samples": {}}
    for limit, names in by_limit.items():  # lm-eval takes one --limit per run
        res = simple_evaluate(
            model=lm,
            tasks=[PREFIX + t for t in names],
            limit=limit,
            log_samples=True,
            gen_kwargs=spec["gen_kwargs"],
            task_manager=tm,
            bootstrap_iters=100000,
        )
        assert res is not None
        for key in merged:
            merged[key].update(res[key])
    strip = len(PREFIX)
    samples: dict[str, list[dict[str, Any]]] = {}
    for task, rows in merged["samples"].items():
        kept = []
        for r in rows:
            kept.append({k: plain(v) for k, v in r.items() if k not in ("doc",)})
        samples[task[strip:]] = kept
    out = {
        "lm_eval_version": getattr(lm_eval, "__version__", _lm_eval_version()),
        "spec": spec,
        "results": {t[strip:]: plain(v) for t, v in merged["results"].items()},
        "n-shot": {t[strip:]: plain(v) for t, v in merged["n-shot"].items()},
        "n-samples": {t[strip:]: plain(v) for t, v in merged["n-samples"].items()},
        "samples": samples,
        "seconds": round(time.monotonic() - t0, 1),
    }
    Path(out_path).write_text(json.dumps(out))


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
