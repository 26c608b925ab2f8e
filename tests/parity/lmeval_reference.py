"""Drive the real lm-evaluation-harness (0.4.13) offline and dump its request Instances as JSON.

This is the independent side of the parity check: it never imports lmeval's compiler. lm-eval runs in a
subprocess (``python lmeval_reference.py --worker IN OUT``) with ``HF_HUB_OFFLINE=1``, a scratch ``HF_HOME``
and a working directory outside any git repository (lm-eval runs ``git describe``). Each task's Hub dataset
is pointed at the local JSONL files (``dataset_path: json``, ``dataset_name: null``,
``dataset_kwargs: {data_files: {split: path}}``, keeping the YAML's split names; a split whose file does not
exist locally is treated as absent, e.g. winogrande's and boolq's ``train``). Requests are then built as
``lm_eval.evaluator.simple_evaluate``/``evaluate`` build them: ``num_fewshot`` override (a task's explicit 0
wins), ``set_fewshot_seed``, ``build_all_requests(limit, rank=0, world_size=1, ...)``, with a chat template
callable that does what ``HFLM.apply_chat_template`` does with the model's tokenizer.

Every Instance becomes ``{"task", "doc_id", "idx", "request_type", "arguments", "repeats"}``
(loglikelihood: ``[context, continuation]``; generate_until: ``[context, gen_kwargs]``), sorted by
(task, doc_id, idx). Results are cached under a scratch directory keyed by the task and settings, the
lm-eval version, the tokenizer and this file, and stay valid only while the data files they read keep
their sha256.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

LMEVAL_VERSION_PIN = "0.4.13"

# lm-eval task folders (under lm_eval/tasks) that hold the tasks we compare, so a run indexes a handful of
# folders instead of all ~228 (6-9 s). Unknown names fall back to the full index.
TASK_DIRS: dict[str, tuple[str, ...]] = {
    "arc_challenge": ("arc",),
    "arc_easy": ("arc",),
    "gsm8k": ("gsm8k",),
    "gsm8k_cot_llama": ("gsm8k",),
    "gsm8k_cot": ("gsm8k",),
    "asdiv": ("asdiv",),
    "asdiv_cot_llama": ("asdiv",),
    "winogrande": ("winogrande",),
    "boolq": ("super_glue/boolq",),
    "piqa": ("piqa",),
    "mmlu": ("mmlu/default",),
    "leaderboard_gpqa": ("leaderboard/gpqa",),
    "leaderboard_gpqa_diamond": ("leaderboard/gpqa",),
    "leaderboard_gpqa_extended": ("leaderboard/gpqa",),
    "leaderboard_gpqa_main": ("leaderboard/gpqa",),
}

# Hub dataset (path, name) -> folder under the local data dir. ``None`` as name matches any name.
DATASET_DIRS: dict[tuple[str, str | None], str] = {
    ("allenai/ai2_arc", "ARC-Challenge"): "arc_challenge",
    ("allenai/ai2_arc", "ARC-Easy"): "arc_easy",
    ("ai2_arc", "ARC-Challenge"): "arc_challenge",
    ("ai2_arc", "ARC-Easy"): "arc_easy",
    ("openai/gsm8k", None): "gsm8k",
    ("gsm8k", None): "gsm8k",
    ("EleutherAI/asdiv", None): "asdiv",
    ("allenai/winogrande", None): "winogrande",
    ("winogrande", None): "winogrande",
    ("aps/super_glue", "boolq"): "boolq",
    ("super_glue", "boolq"): "boolq",
    ("google/boolq", None): "boolq",
    ("baber/piqa", None): "piqa",
    ("ybisk/piqa", None): "piqa",
    ("piqa", None): "piqa",
}


@dataclass(frozen=True)
class RefSpec:
    """One lm-eval request build: a task (or group) name and the run settings that shape its prompts."""

    task: str  # a task or group name, or several comma-separated (lm-eval's --tasks a,b)
    num_fewshot: int | None = None
    limit: int | None = None
    apply_chat_template: bool = False
    fewshot_as_multiturn: bool | None = None  # None: lm-eval's default, on when a chat template is applied
    system_instruction: str | None = None
    fewshot_seed: int = 1234
    model_path: str | None = None  # tokenizer whose chat template is applied
    # lm-eval's --seed python/numpy slots, set once before the tasks load (simple_evaluate); None: not seeded
    python_seed: int | None = None
    numpy_seed: int | None = None

    def resolved_multiturn(self) -> bool:
        return self.apply_chat_template if self.fewshot_as_multiturn is None else self.fewshot_as_multiturn

    def label(self) -> str:
        parts = [self.task]
        if self.num_fewshot is not None:
            parts.append(f"{self.num_fewshot}shot")
        if self.apply_chat_template:
            parts.append("chat-multiturn" if self.resolved_multiturn() else "chat-singleturn")
        if self.system_instruction is not None:
            parts.append("sys")
        if self.fewshot_seed != 1234:
            parts.append(f"seed{self.fewshot_seed}")
        if self.python_seed is not None or self.numpy_seed is not None:
            parts.append(f"globalseed{self.python_seed},{self.numpy_seed}")
        if self.limit is not None:
            parts.append(f"limit{self.limit}")
        return "/".join(parts)


@dataclass
class RefResult:
    spec: RefSpec
    instances: list[dict[str, Any]]
    data_files: dict[str, str] = field(default_factory=dict)  # path -> sha256
    timings: dict[str, float] = field(default_factory=dict)
    cached: bool = False


def local_dataset_dir(dataset_path: str, dataset_name: str | None) -> str:
    """The folder (relative to the data dir) holding a Hub dataset's splits as ``<split>.jsonl``."""
    if (dataset_path, dataset_name) in DATASET_DIRS:
        return DATASET_DIRS[(dataset_path, dataset_name)]
    if (dataset_path, None) in DATASET_DIRS:
        return DATASET_DIRS[(dataset_path, None)]
    base = dataset_path.rstrip("/").split("/")[-1]
    if base == "mmlu":
        return "mmlu" if dataset_name in (None, "all") else f"mmlu/{dataset_name}"
    return base if dataset_name is None else f"{base}/{dataset_name}"


def reference_python() -> str:
    """The interpreter that runs lm-eval: ``$LMEVAL_REFERENCE_PYTHON`` (e.g. a separate venv), else ours."""
    return os.environ.get("LMEVAL_REFERENCE_PYTHON") or sys.executable


@functools.cache
def _lmeval_install() -> tuple[str, str]:
    """(version, lm_eval package dir) of the lm-eval that ``reference_python()`` imports, without importing it."""
    probe = (
        "import importlib.util, importlib.metadata as m; s = importlib.util.find_spec('lm_eval'); "
        "print(m.version('lm_eval') if s else ''); print(s.origin if s else '')"
    )
    if reference_python() == sys.executable:
        import importlib.metadata
        import importlib.util

        spec = importlib.util.find_spec("lm_eval")
        if spec is None or spec.origin is None:
            raise RuntimeError(
                f"lm-eval is not installed in {sys.executable} (pip install lm-eval=={LMEVAL_VERSION_PIN})"
            )
        return importlib.metadata.version("lm_eval"), str(Path(spec.origin).parent)
    out = subprocess.run([reference_python(), "-c", probe], capture_output=True, text=True, check=True).stdout
    version, origin = (out.splitlines() + ["", ""])[:2]
    if not version:
        raise RuntimeError(
            f"lm-eval is not installed in {reference_python()} (pip install lm-eval=={LMEVAL_VERSION_PIN})"
        )
    return version, str(Path(origin).parent)


def lmeval_tasks_root() -> Path:
    """``site-packages/lm_eval/tasks`` of the lm-eval that runs the reference."""
    return Path(_lmeval_install()[1]) / "tasks"


def lmeval_version() -> str:
    return _lmeval_install()[0]


def default_cache_dir() -> Path:
    if env := os.environ.get("LMEVAL_PARITY_CACHE"):
        return Path(env)
    base = os.environ.get("LMEVAL_CACHE") or str(Path.home() / ".cache" / "lmeval")
    return Path(base) / "parity"


def default_data_dir() -> Path:
    if env := os.environ.get("LMEVAL_DATA_DIR"):
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _SHA_MEMO:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _SHA_MEMO[key] = h.hexdigest()
    return _SHA_MEMO[key]


def _tokenizer_fingerprint(model_path: str | None) -> str | None:
    if model_path is None:
        return None
    h = hashlib.sha256()
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        p = Path(model_path) / name
        if p.exists():
            h.update(name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@functools.cache
def _reference_code_hash() -> str:
    """sha256 of the code that shapes the reference's output: the worker side of this file, the dataset
    mapping and the multiturn default (so edits to labels, caching or reporting keep the cache)."""
    import inspect

    text = Path(__file__).read_text()
    worker = text[text.index(_WORKER_MARK) :]
    parts = [worker, inspect.getsource(local_dataset_dir), repr(sorted(DATASET_DIRS.items())),
             inspect.getsource(RefSpec.resolved_multiturn)]  # fmt: skip
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def cache_key(spec: RefSpec, data_dir: Path) -> str:
    payload = {
        "spec": asdict(spec) | {"model_path": None},
        "tokenizer": _tokenizer_fingerprint(spec.model_path) if spec.apply_chat_template else None,
        "lm_eval": lmeval_version(),
        "data_dir": str(data_dir.resolve()),
        "reference_code": _reference_code_hash(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def _cache_load(path: Path) -> dict[str, Any] | None:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            entry: dict[str, Any] = json.load(f)
    except (OSError, ValueError, EOFError):
        return None
    for p, sha in entry.get("data_files", {}).items():
        if not os.path.exists(p) or file_sha256(p) != sha:
            return None
    return entry


def _cache_store(path: Path, entry: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ref.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as f:
        json.dump(entry, f, ensure_ascii=False)
    os.replace(tmp, path)


def reference_instances(
    specs: Sequence[RefSpec],
    data_dir: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    full_index: bool = False,
    emit: bool = True,
    python: str | None = None,
    timeout: float = 3600,
) -> list[RefResult]:
    """lm-eval's Instances for each spec (in order). Cache misses run together in ONE lm-eval subprocess."""
    data = Path(data_dir) if data_dir is not None else default_data_dir()
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    results: list[RefResult | None] = [None] * len(specs)
    todo: list[int] = []
    for i, spec in enumerate(specs):
        entry = _cache_load(cache / f"{cache_key(spec, data)}.json.gz") if use_cache and emit else None
        if entry is not None:
            results[i] = RefResult(spec, entry["instances"], entry["data_files"], entry["timings"], cached=True)
        else:
            todo.append(i)
    if todo:
        out = run_worker(
            [specs[i] for i in todo], data, full_index=full_index, emit=emit, python=python, timeout=timeout
        )
        for i, res in zip(todo, out["results"], strict=True):
            files = {p: file_sha256(p) for p in res["data_files"]}
            r = RefResult(specs[i], res["instances"], files, res["timings"] | out["timings"])
            results[i] = r
            if use_cache and emit:
                entry = {"instances": r.instances, "data_files": files, "timings": r.timings, "spec": asdict(specs[i])}
                _cache_store(cache / f"{cache_key(specs[i], data)}.json.gz", entry)
    return [r for r in results if r is not None]


def run_worker(
    specs: Sequence[RefSpec],
    data_dir: Path,
    *,
    full_index: bool = False,
    emit: bool = True,
    python: str | None = None,
    timeout: float = 3600,
) -> dict[str, Any]:
    """Run lm-eval in a subprocess on ``specs``; returns ``{"results": [...], "timings": {...}}``."""
    with tempfile.TemporaryDirectory(prefix="lmeval-ref-") as scratch:
        s = Path(scratch)
        job = {
            "specs": [asdict(sp) for sp in specs],
            "data_dir": str(data_dir.resolve()),
            "full_index": full_index,
            "emit": emit,
            "tasks_root": str(lmeval_tasks_root()),
        }
        (s / "job.json").write_text(json.dumps(job))
        env = dict(os.environ)
        env.update(
            HF_HUB_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HOME=str(_hf_home()),
            TOKENIZERS_PARALLELISM="false",
            PYTHONHASHSEED="0",
            GIT_CEILING_DIRECTORIES=str(s.parent),
        )
        env.pop("PYTHONPATH", None)
        work = s / "cwd"
        work.mkdir()
        cmd = [
            python or reference_python(),
            "-P",  # keep tests/parity off sys.path: nothing here may shadow lm-eval's imports
            str(Path(__file__).resolve()),
            "--worker",
            str(s / "job.json"),
            str(s / "out.json"),
        ]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr)[-6000:]
            raise RuntimeError(f"lm-eval reference worker failed (exit {proc.returncode}):\n{tail}")
        out: dict[str, Any] = json.loads((s / "out.json").read_text())
        return out


def _hf_home() -> Path:
    """A scratch HF_HOME shared by runs (the datasets cache of the JSON files makes reruns fast)."""
    p = default_cache_dir() / "hf_home"
    p.mkdir(parents=True, exist_ok=True)
    return p


_WORKER_MARK = "# " + "-" * 93 + " worker side"

# --------------------------------------------------------------------------------------------- worker side
# Everything below runs inside the lm-eval subprocess.


def _localize(cfg: dict[str, Any], data_dir: Path, used: set[str]) -> None:
    """Point a task config at ``data_dir``'s JSONL files, keeping its split names."""
    path = cfg.get("dataset_path")
    if not path or path == "json" or callable(cfg.get("custom_dataset")):
        return
    local = data_dir / local_dataset_dir(path, cfg.get("dataset_name"))
    if not local.is_dir():
        raise FileNotFoundError(f"no local data for {path}/{cfg.get('dataset_name')}: {local} does not exist")
    files: dict[str, str] = {}
    for key in ("training_split", "validation_split", "test_split", "fewshot_split"):
        split = cfg.get(key)
        if split is None:
            continue
        f = local / f"{split}.jsonl"
        if f.exists():
            files[split] = str(f)
        else:
            cfg[key] = None
    fs = cfg.get("fewshot_config")
    if isinstance(fs, dict) and fs.get("split") is not None:
        f = local / f"{fs['split']}.jsonl"
        if f.exists():
            files[fs["split"]] = str(f)
        else:
            cfg["fewshot_config"] = {**fs, "split": None}
    used.update(files.values())
    kwargs = {k: v for k, v in (cfg.get("dataset_kwargs") or {}).items() if k not in ("trust_remote_code",)}
    kwargs["data_files"] = files
    cfg["dataset_path"] = "json"
    cfg["dataset_name"] = None
    cfg["dataset_kwargs"] = kwargs


class _ChatTemplater:
    """What HFLM.apply_chat_template does, on a bare tokenizer (no model weights, no torch needed)."""

    def __init__(self, model_path: str) -> None:
        import transformers

        # A tokenizer.json loads as the same fast tokenizer AutoTokenizer builds, without AutoTokenizer's
        # model-class imports (torch, sklearn: ~7 s here).
        if (Path(model_path) / "tokenizer.json").exists():
            self.tokenizer = transformers.PreTrainedTokenizerFast.from_pretrained(model_path)
        else:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_path)
        self.tokenizer_name = self.tokenizer.name_or_path.replace("/", "__")

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        import jinja2

        try:
            out = self.tokenizer.apply_chat_template(
                chat_history,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=not add_generation_prompt,
            )
        except jinja2.exceptions.TemplateError:
            chat_history = [m for m in chat_history if m["role"] != "system"]
            out = self.tokenizer.apply_chat_template(
                chat_history,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=not add_generation_prompt,
            )
        return str(out)


def _instance_dict(inst: Any) -> dict[str, Any]:
    args = inst.arguments
    return {
        "task": inst.task_name,
        "doc_id": inst.doc_id,
        "idx": inst.idx,
        "request_type": inst.request_type,
        "arguments": list(args) if isinstance(args, tuple | list) else [args],
        "repeats": inst.repeats,
    }


def _worker(job_path: str, out_path: str) -> None:
    import logging

    logging.disable(logging.WARNING)
    job = json.loads(Path(job_path).read_text())
    data_dir = Path(job["data_dir"])
    root = Path(job["tasks_root"])
    specs = [RefSpec(**s) for s in job["specs"]]

    t0 = time.perf_counter()
    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._factory import TaskFactory

    t_import = time.perf_counter() - t0

    used_now: set[str] = set()
    orig = TaskFactory._load_full_config

    def load_full_config(self: Any, entry: Any, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        cfg = orig(self, entry, overrides)
        _localize(cfg, data_dir, used_now)
        return cfg

    TaskFactory._load_full_config = load_full_config  # type: ignore[method-assign]

    names = [n for s in specs for n in s.task.split(",")]  # "a,b": lm-eval's --tasks a,b (loaded in that order)
    full = job["full_index"] or any(n not in TASK_DIRS and not n.startswith("mmlu_") for n in names)
    t0, c0 = time.perf_counter(), time.process_time()
    if full:
        tm = TaskManager()
    else:
        dirs = sorted({d for n in names for d in TASK_DIRS["mmlu" if n.startswith("mmlu") else n]})
        tm = TaskManager(include_defaults=False, include_path=[str(root / d) for d in dirs])
    t_index, c_index = time.perf_counter() - t0, time.process_time() - c0

    templaters: dict[str, _ChatTemplater] = {}
    results = []
    for spec in specs:
        used_now.clear()
        if spec.python_seed is not None or spec.numpy_seed is not None:
            # a fresh datasets cache, as on a machine that never ran these tasks: datasets' map cache hands a
            # process_docs that shuffles the result of its first run ever back, whatever the seed since
            import datasets.config

            datasets.config.HF_DATASETS_CACHE = Path(tempfile.mkdtemp(prefix="datasets-", dir=Path(out_path).parent))
        if spec.python_seed is not None:  # as simple_evaluate: seeded once, before any task is built
            random.seed(spec.python_seed)
        if spec.numpy_seed is not None:
            import numpy as np

            np.random.seed(spec.numpy_seed)
        t0, c0 = time.perf_counter(), time.process_time()
        loaded = tm.load(spec.task.split(","))
        tasks = loaded["tasks"]
        t_load, c_load = time.perf_counter() - t0, time.process_time() - c0
        chat = None
        if spec.apply_chat_template:
            if spec.model_path is None:
                raise ValueError(f"{spec.label()}: apply_chat_template needs model_path")
            chat = templaters.setdefault(spec.model_path, _ChatTemplater(spec.model_path))
        t0, c0 = time.perf_counter(), time.process_time()
        instances: list[dict[str, Any]] = []
        n_inst = 0
        for name in tasks:  # as lm_eval.evaluator.evaluate: load order (what global random draws see)
            task = tasks[name]
            # as lm_eval.evaluator.simple_evaluate: a task's explicit 0 shots win over the run's value
            if spec.num_fewshot is not None:
                if task.get_config("num_fewshot") != 0:
                    task.set_config(key="num_fewshot", value=spec.num_fewshot)
            elif task.get_config("num_fewshot") is None:
                task.set_config(key="num_fewshot", value=0)
            task.set_fewshot_seed(seed=spec.fewshot_seed)
            limit = spec.limit
            task.build_all_requests(
                limit=limit,
                rank=0,
                world_size=1,
                system_instruction=spec.system_instruction,
                apply_chat_template=spec.apply_chat_template,
                fewshot_as_multiturn=spec.resolved_multiturn(),
                chat_template=chat.apply_chat_template if chat else None,
                tokenizer_name=chat.tokenizer_name if chat else "",
            )
            n_inst += len(task.instances)
            if job["emit"]:
                instances.extend(_instance_dict(i) for i in task.instances)
        t_build, c_build = time.perf_counter() - t0, time.process_time() - c0
        instances.sort(key=lambda d: (d["task"], d["doc_id"], d["idx"]))
        results.append(
            {
                "instances": instances,
                "n_instances": n_inst,
                "n_docs": sum(len({i.doc_id for i in t.instances}) for t in tasks.values()),
                "tasks": sorted(tasks),
                "data_files": sorted(used_now),
                "timings": {"load_s": t_load, "build_s": t_build, "load_cpu_s": c_load, "build_cpu_s": c_build},
            }
        )
    out = {
        "results": results,
        "timings": {"import_s": t_import, "index_s": t_index, "index_cpu_s": c_index},
        "full_index": full,
    }
    Path(out_path).write_text(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3])
    else:
        print("usage: lmeval_reference.py --worker JOB.json OUT.json", file=sys.stderr)
        sys.exit(2)
