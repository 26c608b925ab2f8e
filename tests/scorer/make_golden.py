"""Regenerate the lm-eval 0.4.13 golden fixtures the scorer parity tests compare against.

    cd /work/main && .venv/bin/python tests/scorer/make_golden.py [--source fake|tiny|metrics|all] [--sample-logs]

Runs lm-eval itself (``lm_eval.evaluator.evaluate`` with ``log_samples=True``) on local data
(``$LMEVAL_DATA_DIR``, default ``<repo>/../shared/data``; ``datasets.load_dataset`` is redirected to the
JSONL files) and writes, per source, ``tests/scorer/golden/<source>.json.gz``: every task's documents (as
lm-eval's process_results sees them: gold, choices), every Instance (arguments and raw responses), every
logged sample (filtered responses and per-sample metric values) and lm-eval's aggregate results
(results, groups, versions, n-shot, higher_is_better, n-samples), plus the group structure.

Sources:
- ``metrics``: the fake LM on the lm-eval task YAMLs in ``tests/scorer/golden_tasks/`` (loaded with
  ``TaskManager(include_path=...)``), written for the metrics and filters no shipped task uses: acc_bytes,
  acc_mutual_info, brier_score, f1, mcc, perplexity, word/byte perplexity, bits_per_byte, bleu, chrf, ter, and
  the filters lowercase, uppercase, map, take_first_k, majority_vote (three varied repeats per doc) and
  multi_choice_regex.
- ``hooks``: the fake LM on what lm-eval runs through user code or HF ``evaluate``: the ``custom`` filter
  (``golden_tasks/golden_custom_filter.yaml`` with ``golden_tasks/golden_hooks.py``), the ``rouge`` metric
  (``golden_tasks/golden_rouge.yaml``), a task's own ``process_results`` (``golden_process_results.yaml``)
  and pass@k (lm-eval's own ``humaneval`` and ``humaneval_64``, whose ``utils.py`` calls HF ``evaluate``'s
  ``code_eval``). ``evaluate.load`` fetches the ``rouge`` and
  ``code_eval`` metric scripts from the Hugging Face Hub, which cannot be reached offline, so for this
  source ``evaluate.load`` is replaced (``patch_evaluate``) by stand-ins written here from those scripts'
  documented behaviour: ``rouge`` is the ``rouge_score`` package (rouge1/rouge2/rougeL/rougeLsum F-measure,
  no stemmer, ``BootstrapAggregator`` mid) and ``code_eval`` runs ``candidate + "\n" + test`` in a plain
  ``python`` subprocess (3 s) and applies Chen et al.'s unbiased estimator in its closed form
  ``1 - C(n-c, k) / C(n, k)``. Everything else (task loading, the custom filter, process_results, the
  per-key aggregation and stderr) is lm-eval's own code.
- ``fake``: a deterministic stand-in LM: log-likelihoods from a hash of the request, rounded so that ties
  occur; generations built from the document's answer in a dozen shapes (right, wrong, commas, "$",
  trailing newline, non-ASCII, no number, ...) so that every filter branch is exercised.
- ``tiny``: the project's tiny model (``lmeval.common.tinymodel.ensure_tiny_model``) through ``--model hf``
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
if str(REPO) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO))

from tests.support import data_dir, offline_env, plain  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"

GOLDEN_TASKS = Path(__file__).resolve().parent / "golden_tasks"
# source -> task -> limit; mmlu is the whole group (57 subjects) at a small limit so group aggregates are covered
SOURCES: dict[str, dict[str, int]] = {
    "fake": {"arc_challenge": 40, "gsm8k": 40, "asdiv": 40, "winogrande": 40, "mmlu": 3},
    "tiny": {"arc_challenge": 12, "gsm8k": 4, "asdiv": 12, "winogrande": 12, "mmlu": 1},
    "metrics": {"golden_mc_metrics": 30, "golden_mc_f1_mcc": 40, "golden_loglikelihood": 30, "golden_rolling": 20,
                "golden_gen_metrics": 24, "golden_mc_gen": 24},
    "hooks": {"golden_rouge": 16, "golden_custom_filter": 24, "golden_process_results": 20, "humaneval": 12,
              "humaneval_64": 2},
}  # fmt: skip


def _files(path: str, name: str | None) -> dict[str, str] | None:
    d = data_dir()
    if path == "allenai/ai2_arc":
        sub = "arc_challenge" if name == "ARC-Challenge" else "arc_easy"
        return {s: str(d / sub / f"{s}.jsonl") for s in ("train", "validation", "test")}
    if path == "openai/gsm8k":
        return {s: str(d / "gsm8k" / f"{s}.jsonl") for s in ("train", "test")}
    if path == "openai/openai_humaneval":
        return {"test": str(d / "humaneval" / "test.jsonl")}
    if path == "EleutherAI/asdiv":
        return {"validation": str(d / "asdiv" / "validation.jsonl")}
    if path == "google/boolq":
        return {"validation": str(d / "boolq" / "validation.jsonl")}
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


def fake_mc_generation(ctx: str, doc: dict[str, Any], k: int) -> str:
    """Answers to a lettered multiple-choice question, in the shapes multi_choice_regex has branches for."""
    choices = [str(c) for c in doc["choices"]]
    right = int(doc.get("answer", 0)) % len(choices)
    pick = (right + (_h("mcpick", ctx, k) % 3 == 0)) % len(choices)
    letter = "ABCD"[pick]
    return [
        f"The answer is ({letter}).",
        f"({letter}) {choices[pick]}",
        f"I think it is {choices[pick].upper()}!",
        f"{choices[pick]}",
        f"Between (A) and ({letter}), ({letter}).",
        "None of these.",
        f"answer: {letter}",
    ][_h("mcgen", ctx, k) % 7]


def fake_code(ctx: str, doc: dict[str, Any], k: int) -> str:
    """A humaneval completion: the canonical body, or one that returns the wrong thing, fails to parse or
    raises."""
    return [
        doc["canonical_solution"],
        doc["canonical_solution"],
        "    return None\n",
        "    retur x\n",
        "    raise ValueError('no')\n",
    ][_h("code", ctx, k) % 5]


def fake_explanation(ctx: str, doc: dict[str, Any]) -> str:
    """Text to score with rouge against gsm8k's worked answer: all of it, part of it, reordered, unrelated,
    empty, non-ASCII."""
    work = str(doc["answer"]).split("####")[0].strip()
    words = work.split()
    return [
        work,
        " ".join(words[: len(words) // 2]),
        " ".join(reversed(words)),
        "I do not know.",
        "",
        f"Réponse : {work.upper()} — voilà.",
        work.replace("\n", " and then "),
    ][_h("explain", ctx) % 7]


def fake_generation(ctx: str, doc: dict[str, Any], k: int = 0) -> str:
    """``k``: which repeat of the request (0 for the first; the goldens made before repeats use only 0)."""
    if "canonical_solution" in doc:
        return fake_code(ctx, doc, k)
    if ctx.startswith("Explain:"):
        return fake_explanation(ctx, doc)
    if isinstance(doc.get("choices"), list):
        return fake_mc_generation(ctx, doc, k)
    ans = _gsm_answer(doc)
    try:
        n = int(ans.replace(",", ""))
    except ValueError:
        n = 7
    k = (_h("gen", ctx) if k == 0 else _h("gen", ctx, k)) % 12
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
            seen: dict[tuple[str, int], int] = {}
            out = []
            for r in requests:  # a request with repeats comes once per repeat: vary the answers
                key = (r.args[0], id(r))
                k = seen[key] = seen.get(key, -1) + 1
                out.append(fake_generation(r.args[0], r.doc, k))
            return out

    return FakeLM()


class _RougeStandIn:
    """HF evaluate's ``rouge`` metric script (evaluate-metric/rouge), defaults as lm-eval calls it."""

    def compute(self, predictions: list[str], references: list[Any], rouge_types: list[str] | None = None,
                use_aggregator: bool = True, use_stemmer: bool = False) -> dict[str, float]:  # fmt: skip
        from rouge_score import rouge_scorer, scoring

        types = rouge_types or ["rouge1", "rouge2", "rougeL", "rougeLsum"]
        scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=use_stemmer)
        assert use_aggregator
        agg = scoring.BootstrapAggregator()
        for ref, pred in zip(references, predictions, strict=True):
            agg.add_scores(scorer.score_multi(ref, pred) if isinstance(ref, list) else scorer.score(ref, pred))
        return {key: float(v.mid.fmeasure) for key, v in agg.aggregate().items()}


class _CodeEvalStandIn:
    """HF evaluate's ``code_eval`` metric script: each ``candidate + "\\n" + test`` passes when it runs to the
    end within ``timeout`` seconds; pass@k is the unbiased estimator, here in its closed form."""

    def compute(self, predictions: list[list[str]], references: list[str], k: tuple[int, ...] = (1, 10, 100),
                num_workers: int = 4, timeout: float = 3.0) -> tuple[dict[str, float], dict[int, Any]]:  # fmt: skip
        import subprocess
        from math import comb

        totals, corrects, results = [], [], {}
        for i, (cands, test) in enumerate(zip(predictions, references, strict=True)):
            passed = []
            for cand in cands:
                try:
                    rc = subprocess.run([sys.executable, "-I", "-c", cand + "\n" + test], capture_output=True,
                                        timeout=timeout, cwd=tempfile.gettempdir()).returncode  # fmt: skip
                except subprocess.TimeoutExpired:
                    rc = -1
                passed.append(rc == 0)
            results[i] = passed
            totals.append(len(cands))
            corrects.append(sum(passed))
        out = {}
        for kk in k:
            if all(n >= kk for n in totals):
                est = [1.0 - comb(n - c, kk) / comb(n, kk) for n, c in zip(totals, corrects, strict=True)]
                out[f"pass@{kk}"] = sum(est) / len(est)
        return out, results


def patch_evaluate() -> None:
    """``evaluate.load("rouge")`` and ``("code_eval")`` without the Hub (see the module docstring)."""
    import evaluate

    stand_ins = {"rouge": _RougeStandIn, "code_eval": _CodeEvalStandIn}

    def load(path: str, *a: Any, **kw: Any) -> Any:
        if path not in stand_ins:
            raise RuntimeError(f"make_golden: evaluate.load({path!r}) has no offline stand-in")
        return stand_ins[path]()

    evaluate.load = load


def make_tiny_lm() -> Any:
    from lm_eval.models.huggingface import HFLM

    from lmeval.common.tinymodel import ensure_tiny_model

    path = ensure_tiny_model()
    return HFLM(pretrained=str(path), device="cpu", batch_size=8, max_length=2048)


# lm-eval bootstraps the stderr of corpus-level metrics (bleu, chrf, ter, f1, mcc, perplexity); 100,000 draws
# of a corpus bleu take hours here, so the metrics golden uses fewer (recorded in the golden; the parity test
# scores with the same number, and our bootstrap reproduces lm-eval's draws exactly).
BOOTSTRAP_ITERS = {"fake": 100000, "tiny": 100000, "metrics": 1000, "hooks": 1000}


def run(source: str, tasks: dict[str, int], sample_logs: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The golden of ``source``; ``sample_logs``, when given, gets each task's ``--log_samples`` lines."""
    from lm_eval.api.group import Group
    from lm_eval.evaluator import evaluate
    from lm_eval.tasks import TaskManager

    lm = make_tiny_lm() if source == "tiny" else make_fake_lm()
    iters = BOOTSTRAP_ITERS.get(source, 100000)
    out: dict[str, Any] = {"source": source, "tasks": {}, "groups": [], "lm_eval_version": None}
    if iters != 100000:
        out["bootstrap_iters"] = iters
    import lm_eval

    out["lm_eval_version"] = getattr(lm_eval, "__version__", None)
    tm = TaskManager(include_path=str(GOLDEN_TASKS)) if source in ("metrics", "hooks") else TaskManager()
    for name, limit in tasks.items():
        loaded = tm.load([name])
        for t in loaded["tasks"].values():
            if t.get_config("num_fewshot") is None:
                t.set_config(key="num_fewshot", value=0)
            t.set_fewshot_seed(seed=1234)
        res = evaluate(
            lm=lm, task_dict=loaded, limit=limit, bootstrap_iters=iters, log_samples=True, confirm_run_unsafe_code=True
        )
        assert res is not None
        for tname, task in loaded["tasks"].items():
            out["tasks"][tname] = _task_entry(tname, task, res)
        if sample_logs is not None:
            sample_logs.update(_sample_logs(res))
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
            out.setdefault("lm_eval_results", {}).setdefault(k, {}).update(plain(res.get(k, {})))
    return out


def _task_entry(name: str, task: Any, res: dict[str, Any]) -> dict[str, Any]:
    cfg = task.config
    docs: dict[int, dict[str, Any]] = {}
    instances = []
    position: dict[int, int] = {}
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
                "doc": plain(doc),
                "target": plain(gold),
                "choices": plain(choices),
            }
        args = list(inst.arguments)
        # idx: the request's position within its doc (lm-eval numbers acc_mutual_info's unconditional
        # requests 0..n-1 again; lmeval's plans number them n..2n-1, after the conditional ones)
        pos = position[inst.doc_id] = position.get(inst.doc_id, -1) + 1
        entry: dict[str, Any] = {
            "doc_id": inst.doc_id,
            "idx": pos,
            "request_type": inst.request_type,
            "context": args[0],
        }
        if inst.repeats != 1:
            entry["repeats"] = inst.repeats
        if inst.request_type == "loglikelihood":
            entry["continuation"] = args[1]
        elif inst.request_type == "generate_until":
            entry["generation_kwargs"] = plain(args[1])
        entry["resps"] = plain(inst.resps)
        instances.append(entry)
    samples = []
    for s in res["samples"][name]:
        row = {"doc_id": s["doc_id"], "filter": s["filter"], "filtered_resps": plain(s["filtered_resps"])}
        for m in s["metrics"]:
            row[m] = plain(s[m])
        samples.append(row)
    return {
        "output_type": task.OUTPUT_TYPE,
        "num_fewshot": cfg.num_fewshot,
        "version": task.VERSION,
        "task_alias": cfg.task_alias,
        "metric_list": plain(cfg.metric_list) or [],
        "filter_list": plain(cfg.filter_list) or [],
        "multiple_input": bool(getattr(task, "multiple_input", 0)),
        "process_results": plain(cfg.process_results),
        "docs": sorted(docs.values(), key=lambda d: d["doc_id"]),
        "instances": instances,
        "samples": samples,
    }


def _write(target: Path, data: dict[str, Any]) -> None:
    raw = json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=True).encode()
    with gzip.GzipFile(target, "wb", mtime=0) as f:
        f.write(raw)
    print(f"wrote {target} ({target.stat().st_size} bytes)")


def _sample_logs(res: dict[str, Any]) -> dict[str, list[str]]:
    """Each task's ``samples_<task>_<date>.jsonl`` lines, written by lm-eval's own EvaluationTracker (after
    ``_task_entry`` read the samples: the tracker rewrites them in place)."""
    from lm_eval.loggers import EvaluationTracker

    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="lmeval-samples-") as tmp:
        tracker = EvaluationTracker(output_path=tmp)
        tracker.date_id = "DATE"  # set by save_results_aggregated, which is not called here
        for tname in res["samples"]:
            tracker.save_results_samples(task_name=tname, samples=res["samples"][tname])
            (path,) = Path(tmp).rglob(f"samples_{tname}_DATE.jsonl")
            out[tname] = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", choices=(*SOURCES, "all"), default="all")
    ap.add_argument("--sample-logs", action="store_true",
                    help="also write <source>.samples.json.gz: lm-eval's --log_samples lines per task")  # fmt: skip
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="lmeval-golden-")
    for k, v in offline_env(scratch).items():
        os.environ.setdefault(k, v)
    os.chdir(scratch)  # lm-eval runs `git describe` in the working directory
    patch_datasets()
    patch_evaluate()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    sources = list(SOURCES) if args.source == "all" else [args.source]
    for src in sources:
        logs: dict[str, list[str]] | None = {} if args.sample_logs else None
        data = run(src, SOURCES[src], logs)
        _write(GOLDEN / f"{src}.json.gz", data)
        if logs is not None:
            _write(GOLDEN / f"{src}.samples.json.gz", {"source": src, "tasks": logs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
