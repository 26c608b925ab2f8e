"""Regenerate the lm-eval 0.4.13 golden fixtures the scorer parity tests compare against.

    cd /work/main && .venv/bin/python tests/scorer/make_golden.py [--source fake|tiny|all]

Runs lm-eval itself (``lm_eval.evaluator.evaluate`` with ``log_samples=True``) on local data
(``$LMEVAL_DATA_DIR``, default ``<repo>/../shared/data``; ``datasets.load_dataset`` is redirected to the
JSONL files) and writes, per source, ``tests/scorer/golden/<source>.json.gz``: every task's documents (as
lm-eval's process_results sees them: gold, choices), every Instance (arguments and raw responses), every
logged sample (filtered responses and per-sample metric values) and lm-eval's aggregate results
(results, groups, versions, n-shot, higher_is_better, n-samples), plus the group structure.

Sources:
- ``fake``: a deterministic stand-in LM: log-likelihoods from a hash of the request, rounded so that ties
  occur; generations built from the document's answer in a dozen shapes (right, wrong, commas, "$",
  trailing newline, non-ASCII, no number, ...) so that every filter branch is exercised.
- ``tiny``: the project's tiny model (``plans.tinymodel.ensure_tiny_model``) through ``--model hf``
  (``HFLM``) on CPU.

It runs from a scratch directory with HF offline settings and a scratch HF_HOME. Takes ~1-3 minutes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"

# task -> limit; mmlu is the whole group (57 subjects) at a small limit so group aggregates are covered
TASKS: dict[str, int] = {
    "arc_challenge": 40,
    "gsm8k": 40,
    "asdiv": 40,
    "winogrande": 40,
    "mmlu": 3,
}
TINY_TASKS: dict[str, int] = {
    "arc_challenge": 12,
    "gsm8k": 4,
    "asdiv": 12,
    "winogrande": 12,
    "mmlu": 1,
}


def data_dir() -> Path:
    env = os.environ.get("LMEVAL_DATA_DIR")
    return Path(env) if env else (REPO / ".." / "shared" / "data").resolve()


def _files(path: str, name: str | None) -> dict[str, str] | None:
    d = data_dir()
    if path == "allenai/ai2_arc":
        sub = "arc_challenge" if name == "ARC-Challenge" else "arc_easy"
        return {s: str(d / sub / f"{s}.jsonl") for s in ("train", "validation", "test")}
    if path == "openai/gsm8k":
        return {s: str(d / "gsm8k" / f"{s}.jsonl") for s in ("train", "test")}
    if path == "EleutherAI/asdiv":
        return {"validation": str(d / "asdiv" / "validation.jsonl")}
    if path == "allenai/winogrande":
        v = str(d / "winogrande" / "validation.jsonl")
        return {"train": v, "validation": v}  # no train split locally; only few-shot pools read it
    if path == "cais/mmlu":
        return {s: str(d / "mmlu" / str(name) / f"{s}.jsonl") for s in ("dev", "validation", "test")}
    return None


def patch_datasets() -> None:
    import datasets

    original = datasets.load_dataset

    def load_dataset(path: str | None = None, name: str | None = None, **kw: Any) -> Any:
        files = _files(str(path), name)
        if files is None:
            return original(path=path, name=name, **kw)
        kw.pop("data_files", None)
        return original("json", data_files=files)

    datasets.load_dataset = load_dataset  # type: ignore[assignment]


def _h(*parts: Any) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _gsm_answer(doc: dict[str, Any]) -> str:
    return str(doc.get("answer", "")).split("####")[-1].strip()


def fake_generation(ctx: str, doc: dict[str, Any]) -> str:
    ans = _gsm_answer(doc)
    try:
        n = int(ans.replace(",", ""))
    except ValueError:
        n = 7
    k = _h("gen", ctx) % 12
    return [
        f"Let me think step by step.\nSo {n - 1} + 1 = {n}.\n#### {n}",
        f"#### {n:,}",
        f"The answer is ${n}.\n",
        "I do not know.",
        f"{n} is close, but really it is {n + 1}",
        f"Réponse : {n} € au total.\n#### {n}",
        f"#### {n}\n",
        f"#### {n + 3}.",
        f"\x1c#### {n}\x1c and then -{n}.5 more",
        f"We get {n},000 or {n}.",
        f"   {n}   ",
        f"Question: next\n#### -{n}",
    ][k]


def make_fake_lm() -> Any:
    from lm_eval.api.model import LM

    class FakeLM(LM):  # type: ignore[misc]
        def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
            out = []
            for r in requests:
                ctx, cont = r.args[0], r.args[1]
                h = _h("ll", ctx, cont)
                ll = -round((h % 4000) / 100.0, 1) - 0.5  # one decimal: ties between choices happen
                out.append((ll, h % 5 == 0))
            return out

        def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
            return [-float(_h("roll", r.args[0]) % 10000) / 10.0 for r in requests]

        def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
            return [fake_generation(r.args[0], r.doc) for r in requests]

    return FakeLM()


def make_tiny_lm() -> Any:
    sys.path.insert(0, str(REPO))
    from lm_eval.models.huggingface import HFLM

    from plans.tinymodel import ensure_tiny_model

    path = ensure_tiny_model()
    return HFLM(pretrained=str(path), device="cpu", batch_size=8, max_length=2048)


def _plain(x: Any) -> Any:
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if callable(x):
        return {"__function__": getattr(x, "__qualname__", str(x))}
    return x


def run(source: str, tasks: dict[str, int]) -> dict[str, Any]:
    from lm_eval.api.group import Group
    from lm_eval.evaluator import evaluate
    from lm_eval.tasks import TaskManager

    lm = make_fake_lm() if source == "fake" else make_tiny_lm()
    out: dict[str, Any] = {"source": source, "tasks": {}, "groups": [], "lm_eval_version": None}
    import lm_eval

    out["lm_eval_version"] = getattr(lm_eval, "__version__", None)
    tm = TaskManager()
    for name, limit in tasks.items():
        loaded = tm.load([name])
        for t in loaded["tasks"].values():
            if t.get_config("num_fewshot") is None:
                t.set_config(key="num_fewshot", value=0)
            t.set_fewshot_seed(seed=1234)
        res = evaluate(lm=lm, task_dict=loaded, limit=limit, bootstrap_iters=100000, log_samples=True)
        assert res is not None
        for tname, task in loaded["tasks"].items():
            out["tasks"][tname] = _task_entry(tname, task, res)
        for g in loaded["groups"].values():
            assert isinstance(g, Group)
            out["groups"].append(
                {
                    "name": g.name,
                    "alias": g.alias,
                    "subtasks": g.child_names,
                    "aggregate_metric_list": [
                        {k: v for k, v in vars(a).items()} for a in (g.aggregate_metric_list or [])
                    ],
                    "version": g.version,
                }
            )
        keep = ("results", "groups", "group_subtasks", "versions", "n-shot", "higher_is_better", "n-samples")
        for k in keep:
            out.setdefault("lm_eval_results", {}).setdefault(k, {}).update(_plain(res.get(k, {})))
    return out


def _task_entry(name: str, task: Any, res: dict[str, Any]) -> dict[str, Any]:
    cfg = task.config
    docs: dict[int, dict[str, Any]] = {}
    instances = []
    for inst in task.instances:
        doc = inst.doc
        if inst.doc_id not in docs:
            choices = task.doc_to_choice(doc) if cfg.doc_to_choice is not None else None
            if task.OUTPUT_TYPE == "multiple_choice" and task.multiple_input:
                gold = task.doc_to_text(doc)
            else:
                gold = task.doc_to_target(doc)
            docs[inst.doc_id] = {
                "doc_id": inst.doc_id,
                "doc": _plain(doc),
                "target": _plain(gold),
                "choices": _plain(choices),
            }
        args = list(inst.arguments)
        entry: dict[str, Any] = {
            "doc_id": inst.doc_id,
            "idx": inst.idx,
            "request_type": inst.request_type,
            "context": args[0],
        }
        if inst.request_type == "loglikelihood":
            entry["continuation"] = args[1]
        elif inst.request_type == "generate_until":
            entry["generation_kwargs"] = _plain(args[1])
        entry["resps"] = _plain(inst.resps)
        instances.append(entry)
    samples = []
    for s in res["samples"][name]:
        row = {"doc_id": s["doc_id"], "filter": s["filter"], "filtered_resps": _plain(s["filtered_resps"])}
        for m in s["metrics"]:
            row[m] = _plain(s[m])
        samples.append(row)
    return {
        "output_type": task.OUTPUT_TYPE,
        "num_fewshot": cfg.num_fewshot,
        "version": task.VERSION,
        "task_alias": cfg.task_alias,
        "metric_list": _plain(cfg.metric_list) or [],
        "filter_list": _plain(cfg.filter_list) or [],
        "multiple_input": bool(getattr(task, "multiple_input", 0)),
        "docs": sorted(docs.values(), key=lambda d: d["doc_id"]),
        "instances": instances,
        "samples": samples,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", choices=("fake", "tiny", "all"), default="all")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    scratch = tempfile.mkdtemp(prefix="lmeval-golden-")
    os.environ.setdefault("HF_HOME", os.path.join(scratch, "hf"))
    os.chdir(scratch)  # lm-eval runs `git describe` in the working directory
    patch_datasets()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    sources = ["fake", "tiny"] if args.source == "all" else [args.source]
    for src in sources:
        data = run(src, TASKS if src == "fake" else TINY_TASKS)
        target = GOLDEN / f"{src}.json.gz"
        raw = json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=True).encode()
        with gzip.GzipFile(target, "wb", mtime=0) as f:
            f.write(raw)
        print(f"wrote {target} ({target.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
