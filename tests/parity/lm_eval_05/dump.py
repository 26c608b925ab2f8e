"""Dump lm-eval 0.5.0.dev1's own request Instances (and scores) as the goldens of issue #55.

lm-eval 0.5 is never installed beside the suite's 0.4.13; it runs in a venv of its own. Regenerate with::

    python3 -m venv /tmp/lm05 && /tmp/lm05/bin/pip install torch==2.13.0 requests
    /tmp/lm05/bin/pip install lm-eval==0.5.0.dev1
    /tmp/lm05/bin/python -P tests/parity/lm_eval_05/dump.py [DATA_DIR]   # default: /work/shared/data

It writes ``golden/requests.json.gz`` (every case of ``CASES``: its Instances, or the one-line error lm-eval
0.5 raises) and ``golden/scores.json.gz`` (``SCORE_CASES``: Instances, the fake log-likelihoods fed to
lm-eval 0.5's own ``process_results``/aggregation, and its per-document and aggregated metrics). The tests
under tests/compiler/formats and tests/scorer read only these files. Each Hub dataset is pointed at the local
JSONL files as tests/parity/lmeval_reference.py does for 0.4.13 (``dataset_path: json``, a split without a
local file treated as absent). Few-shot seed 1234, as lm-eval's default.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
LIMIT = 3
SEED = 1234
VERSION = "0.5.0.dev1"

# the multiple-choice tasks of acceptance 1: lm-eval's own YAMLs (the same files in 0.4.13 and 0.5.0.dev1)
CATALOG = ["arc_easy", "arc_challenge", "mmlu_anatomy", "mmlu_astronomy", "mmlu_high_school_geography", "piqa",
           "boolq"]  # fmt: skip
# the same tasks written in 0.5's style (yaml/*_05.yaml: the question as a field, no "Answer:")
STYLE05 = [f"{t}_05" for t in CATALOG]
FORMATS = ["mcqa", "cloze", "generate", "cot"]
# yaml/formats_*.yaml: a `formats:` block (several named formats, overrides), a string, a `type:` mapping
BLOCKS = {
    "arc_formats": ["", "@mcqa", "@cloze", "@generate", "@tight", "@cot"],
    "arc_format_string": ["", "@mcqa", "@generate"],
    "arc_format_type": ["", "@cloze", "@cot"],
}
DATASET_DIRS: dict[tuple[str, str | None], str] = {
    ("allenai/ai2_arc", "ARC-Challenge"): "arc_challenge",
    ("allenai/ai2_arc", "ARC-Easy"): "arc_easy",
    ("allenai/winogrande", None): "winogrande",
    ("aps/super_glue", "boolq"): "boolq",
    ("baber/piqa", None): "piqa",
}


def cases() -> list[tuple[str, list[str], int]]:
    """(case id, --tasks names, num_fewshot)."""
    out = []
    for shots in (0, 5):
        for base in CATALOG + STYLE05:
            for fmt in FORMATS:
                out.append((f"{base}@{fmt}/{shots}shot", [f"{base}@{fmt}"], shots))
        for base, sels in BLOCKS.items():
            for sel in sels:
                out.append((f"{base}{sel}/{shots}shot", [f"{base}{sel}"], shots))
    # group paths and overlapping groups (acceptance 4)
    for path in ("mmlu::humanities", "mmlu::mmlu_humanities", "arc_paths::easy", "arc_paths::both",
                 "arc_paths::both::arc_challenge", "arc_paths::hard", "arc_easy::x"):  # fmt: skip
        out.append((f"path:{path}", [path], -1))
    out.append(("path:mmlu_humanities", ["mmlu_humanities"], 0))
    out.append(("overlap_groups", ["overlap_a", "overlap_b"], -1))
    return out


def _local(cfg: dict[str, Any], data_dir: Path) -> None:
    path = cfg.get("dataset_path")
    if not path or path == "json":
        return
    name = cfg.get("dataset_name")
    folder = DATASET_DIRS.get((path, name)) or DATASET_DIRS.get((path, None))
    if folder is None and path == "cais/mmlu":
        folder = f"mmlu/{name}"
    if folder is None:
        raise FileNotFoundError(f"no local data for {path}/{name}")
    local = data_dir / folder
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
    cfg["dataset_path"], cfg["dataset_name"] = "json", None
    cfg["dataset_kwargs"] = {"data_files": files}


def _instance(inst: Any) -> dict[str, Any]:
    args = inst.arguments
    return {
        "task": inst.task_name,
        "doc_id": inst.doc_id,
        "idx": inst.idx,
        "request_type": inst.request_type,
        "arguments": list(args) if isinstance(args, tuple | list) else [args],
        "repeats": inst.repeats,
        "target": inst.target,
    }


def _manager(data_dir: Path) -> Any:
    import lm_eval
    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._factory import TaskFactory

    orig = TaskFactory._load_full_config

    def load_full_config(self: Any, entry: Any, overrides: Any = None) -> dict[str, Any]:
        cfg = orig(self, entry, overrides)
        _local(cfg, data_dir)
        return cfg

    TaskFactory._load_full_config = load_full_config  # type: ignore[method-assign]
    root = Path(lm_eval.__file__).parent / "tasks"
    dirs = [root / d for d in ("arc", "piqa", "super_glue/boolq", "mmlu/default", "winogrande")]
    return TaskManager(include_defaults=False, include_path=[str(d) for d in dirs] + [str(HERE / "yaml")])


def _build(tm: Any, names: list[str], shots: int) -> tuple[dict[str, Any], list[Any]]:
    loaded = tm.load(names)
    tasks = loaded["tasks"]
    built = []
    for key, task in tasks.items():
        if shots >= 0:
            task.set_num_fewshot(shots)
        task.set_fewshot_seed(seed=SEED)
        task.build_all_requests(limit=LIMIT, rank=0, world_size=1)
        built.append((key, task))
    return loaded, built


def dump_requests(tm: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cid, names, shots in cases():
        try:
            loaded, built = _build(tm, names, shots)
        except Exception as e:  # what 0.5 refuses: its one-line reason
            out[cid] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
            continue
        insts = [dict(_instance(i), key=key) for key, t in built for i in t.instances]
        insts.sort(key=lambda d: (d["key"], d["doc_id"], d["idx"]))
        out[cid] = {
            "instances": insts,
            "tasks": {key: t.config.num_fewshot for key, t in built},
            "groups": {g: list(c) for g, c in loaded["group_map"].items()},
        }
    return out


def fake_loglikelihood(context: str, continuation: str) -> tuple[float, bool]:
    """A deterministic stand-in for a model: the log-likelihood depends on both strings' bytes."""
    h = 0
    for ch in (context[-64:] + "\0" + continuation).encode():
        h = (h * 131 + ch) % 1_000_003
    return -(h % 9973) / 997.0 - 0.01 * len(continuation), h % 7 == 0


def fake_generation(context: str, n: int = 0) -> str:
    h = (sum(context.encode()) + n) % 4
    return [" A", " B.", " The best answer is (C)", " d"][h]


# (golden name, --tasks, num_fewshot): lm-eval 0.5's scores of fake outputs on these
SCORE_CASES = [
    ("winogrande", ["winogrande"], 0),  # its own YAML: multiple_inputs: true
    ("winogrande_5shot", ["winogrande"], 5),
    ("arc_scorer", ["arc_scorer"], 0),  # scorer: first_token
    ("arc_scorer_type", ["arc_scorer_type"], 0),  # scorer: {type: choice_match}
    ("arc_easy_05@generate", ["arc_easy_05@generate"], 0),  # the format's scorer
    ("arc_scorer_repeats", ["arc_scorer_repeats"], 0),  # repeats: 3 (scores_per_repeat)
]
SCORE_LIMIT = 20


def _fake_lm() -> Any:
    from lm_eval.api.model import LM

    class FakeLM(LM):  # type: ignore[misc]
        def loglikelihood(self, requests: Any) -> list[tuple[float, bool]]:
            return [fake_loglikelihood(*r.args) for r in requests]

        def loglikelihood_rolling(self, requests: Any) -> list[float]:
            raise NotImplementedError

        def generate_until(self, requests: Any) -> list[str]:
            out, seen = [], {}
            for r in requests:  # a repeated request comes once per repeat: the n-th answer shifts by n
                n = seen[id(r)] = seen.get(id(r), -1) + 1
                out.append(fake_generation(r.args[0], n))
            return out

    return FakeLM()


def dump_scores(tm: Any) -> dict[str, Any]:
    """lm-eval 0.5's own scoring of fake outputs (``simple_evaluate`` with a fake model, samples logged):
    its results and sample logs, and each Instance with the response it was given."""
    from lm_eval.evaluator import simple_evaluate

    out: dict[str, Any] = {}
    for cid, names, shots in SCORE_CASES:
        lm = _fake_lm()
        try:
            res = simple_evaluate(model=lm, tasks=names, num_fewshot=shots, limit=SCORE_LIMIT, task_manager=tm,
                                  bootstrap_iters=0, log_samples=True, fewshot_random_seed=SEED)  # fmt: skip
        except Exception as e:
            out[cid] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
            continue
        assert res is not None
        doc = dict(res)
        samples = doc.pop("samples", {}) or {}
        tasks: dict[str, Any] = {}
        for tname, rows in samples.items():
            insts = []
            for row in rows:
                for idx, (args, resp) in enumerate(zip(row["arguments"], row["resps"], strict=True)):
                    a = list(args.values()) if isinstance(args, dict) else list(args)
                    inst = {"doc_id": row["doc_id"], "idx": idx, "context": a[0], "resps": resp}
                    if isinstance(a[1], str):
                        inst |= {"request_type": "loglikelihood", "continuation": a[1]}
                    else:
                        inst |= {"request_type": "generate_until", "generation_kwargs": a[1]}
                    insts.append(inst)
            tasks[tname] = {"instances": insts, "samples": rows}
        keys = ("results", "groups", "group_subtasks", "n-shot", "higher_is_better", "versions")
        out[cid] = {"tasks": tasks, "results": {k: doc.get(k) for k in keys}}
    return _jsonable(out)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, str | int | float | bool) or x is None:
        return x
    return repr(x)


def _write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=0).encode()
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9) as g:
        g.write(raw)


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":  # lm-eval's messages print sets: one order, the same bytes
        os.execve(sys.executable, [sys.executable, "-P", *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before datasets is imported: nothing is fetched
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="lm05-hf-"))
    logging.disable(logging.WARNING)
    import lm_eval

    version = getattr(lm_eval, "__version__", None) or __import__("importlib.metadata").metadata.version("lm_eval")
    if version != VERSION:
        sys.exit(f"lm-eval {version} found; the goldens are lm-eval {VERSION}'s")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    data_dir = Path(args[0] if args else "/work/shared/data")
    tm = _manager(data_dir)
    head = {"lm_eval": VERSION, "limit": LIMIT, "fewshot_seed": SEED}
    _write(GOLDEN / "requests.json.gz", {**head, "cases": dump_requests(tm)})
    if "--requests-only" not in sys.argv:
        try:
            _write(GOLDEN / "scores.json.gz", {**head, "cases": dump_scores(tm)})
        except Exception:
            traceback.print_exc()
            sys.exit(1)


if __name__ == "__main__":
    main()
