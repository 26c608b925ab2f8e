"""Every Eval Ever (EvalEval, schema 0.3.0) files from a scored run: per task one aggregate file
(``eval.schema.json``) and its instance-level file (``instance_level_eval.schema.json``), laid out as the
EEE datastore lays them out::

    data/lmeval/<developer>/<model>/<uuid>.json            aggregate: one evaluation_result per metric,filter
    data/lmeval/<developer>/<model>/<uuid>_samples.jsonl   one line per (filter, document, numeric metric)

The schemas are vendored in ``eee_schemas/`` (MIT, EvalEval; the ``every-eval-ever`` package ships them but
needs Python >= 3.12). The file uuid is derived from the plan hash, the task and the model (a re-export writes
the same names). lmeval's provenance goes where the schema has room for strings: ``eval_library`` and
``source_data`` ``additional_details`` (plan hash, task hash, data fingerprint, tokenizer hash, chat template
hash), each instance's ``metadata`` (request hashes of its Instances, the plan's doc hash, lm-eval's
prompt/target hashes); ``sample_hash`` is EEE's own (sha256 of the prompt and reference, as its lm-eval
converter computes it), so lmeval and lm-eval runs of one task join on it.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from pathlib import Path
from typing import Any

import polars as pl

from lmeval.common import json_text
from lmeval.plans import TaskSummary
from lmeval.report.export.hf_eval_results import hub_dataset
from lmeval.report.export.inputs import ExportRun
from lmeval.report.export.lm_eval_samples import lm_eval_target, sha256
from lmeval.scorer import metric_of_key

SCHEMA_VERSION = "0.3.0"
SCHEMA_DIR = Path(__file__).resolve().parent / "eee_schemas"
COLLECTION = "lmeval"
_SAMPLE_COLUMNS = ("task", "doc_id", "filter", "target", "filtered", "items", "reasoning", "reasoning_chars", "answer")


def _strings(d: dict[str, Any]) -> dict[str, str]:
    """``additional_details`` maps hold strings only: present values as text."""
    kept = {k: v for k, v in d.items() if v is not None and v != ""}
    return {k: v if isinstance(v, str) else json_text(v, ensure_ascii=True) for k, v in kept.items()}


def result_id(metric: str, filt: str) -> str:
    """The join key of an aggregate result and its instance lines (EEE's lm-eval convention)."""
    return metric if filt == "none" else f"{metric}:{filt}"


def _model(run: ExportRun) -> tuple[str, str, str]:
    """(model id, developer, name) for the datastore path."""
    mid = str(run.header.model.path or run.manifest.get("model", {}).get("name") or run.header.model.name)
    dev, _, name = mid.rpartition("/")
    safe = [("".join(c if c.isalnum() or c in "._-" else "_" for c in p) or "unknown") for p in (dev, name)]
    return mid, safe[0], safe[1]


def file_uuid(run: ExportRun, task: str) -> str:
    digest = hashlib.sha256(f"{run.header.plan_hash}\x00{task}\x00{_model(run)[0]}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _provenance(run: ExportRun, ts: TaskSummary) -> dict[str, str]:
    m = run.header.model
    return _strings({
        "plan_hash": run.header.plan_hash, "task_hash": ts.task_hash, "data_fingerprint": ts.data_fingerprint,
        "tokenizer": m.tokenizer, "tokenizer_hash": m.tokenizer_hash, "chat_template_hash": m.chat_template_hash,
        "model_revision": m.revision, "num_fewshot": str(ts.num_fewshot), "task_version": ts.version,
        "backend": run.manifest.get("backend"),
    })  # fmt: skip


def _source_data(ts: TaskSummary, n: int) -> dict[str, Any]:
    cfg = ts.config if isinstance(ts.config, dict) else {}
    path = hub_dataset(ts)
    details = _strings({"data_fingerprint": ts.data_fingerprint, "dataset_name": cfg.get("dataset_name")})
    if path is not None:
        out: dict[str, Any] = {"dataset_name": ts.name, "source_type": "hf_dataset", "hf_repo": path,
                               "samples_number": n, "additional_details": details}  # fmt: skip
        split = cfg.get("test_split") or cfg.get("validation_split")
        if isinstance(split, str):
            out["hf_split"] = split
        return out
    return {"dataset_name": ts.name, "source_type": "other", "additional_details": details}


def _metric_config(metric: str, higher: Any) -> dict[str, Any]:
    """A continuous metric with its range: [0, 1] for proportions, unbounded (EEE's "-Infinity"/"Infinity")
    where lmeval does not know it."""
    lo: float | str = "-Infinity"
    hi: float | str = "Infinity"
    m = metric_of_key(metric)  # the scorer's registry: proportions and other known bounds
    if m is not None and m.unit:
        lo, hi = 0.0, 1.0
    elif m is not None and m.bounds is not None:
        lo, hi = m.bounds
    return {"metric_id": metric, "metric_name": metric, "lower_is_better": higher is False,
            "score_type": "continuous", "min_score": lo, "max_score": hi}  # fmt: skip


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def eee_aggregate(run: ExportRun, ts: TaskSummary, stamp: str, samples_path: str, checksum: str, rows: int) -> dict:
    res = run.results.get("results", {}).get(ts.name, {})
    hib = run.results.get("higher_is_better", {}).get(ts.name, {})
    n = int(res.get("sample_len") or ts.n_docs)
    mid = _model(run)[0]
    results = []
    for key, value in res.items():
        metric, sep, filt = key.partition(",")
        score = _number(value)
        if not sep or metric.endswith("_stderr") or score is None:
            continue
        details: dict[str, Any] = {"score": score, "uncertainty": {"num_samples": n}}
        se = _number(res.get(f"{metric}_stderr,{filt}"))
        if se is not None:
            details["uncertainty"]["standard_error"] = {"value": se}
            details["uncertainty"]["num_bootstrap_samples"] = int(run.results.get("bootstrap_iters") or 0)
        results.append({
            "evaluation_result_id": result_id(metric, filt),
            "evaluation_name": ts.name if filt == "none" else f"{ts.name}/{filt}",
            "source_data": _source_data(ts, n),
            "metric_config": _metric_config(metric, hib.get(metric)),
            "score_details": details,
        })  # fmt: skip
    finished = run.manifest.get("finished")
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": f"{ts.name}/{mid}/{stamp}",
        "retrieved_timestamp": stamp,
        "source_metadata": {"source_name": "lmeval", "source_type": "evaluation_run",
                            "source_organization_name": "unknown", "evaluator_relationship": "other"},
        "eval_library": {"name": "lmeval", "version": run.header.lmeval_version or "unknown",
                         "additional_details": _provenance(run, ts)},
        "model_info": {"name": run.header.model.name, "id": mid, "developer": _model(run)[1],
                       "inference_engine": {"name": str(run.manifest.get("backend") or "unknown")},
                       "additional_details": {"deployment_type": "self_deployed", "model_availability": "unknown"}},
        "evaluation_results": results,
        "detailed_evaluation_results": {"format": "jsonl", "file_path": samples_path, "hash_algorithm": "sha256",
                                        "checksum": checksum, "total_rows": rows},
    }  # fmt: skip
    if isinstance(finished, str) and finished:
        out["evaluation_timestamp"] = finished
    return out


def _output(ts: TaskSummary, rows: list[dict[str, Any]], choices: list[str] | None) -> list[str]:
    """What the model answered: generations, else the choice of highest log-likelihood, else the number."""
    if ts.output_type == "generate_until":
        return [str(x) for r in rows for x in (r.get("responses") or [r.get("response")])]
    lls = [r.get("loglikelihood") for r in rows]
    if ts.output_type == "multiple_choice" and choices and len(lls) >= len(choices):
        known = [float(x) if isinstance(x, int | float) else -math.inf for x in lls]
        best = max(range(len(choices)), key=lambda i: known[i])
        return [str(choices[best])]
    return [str(x) for x in lls]


def instance_lines(run: ExportRun, ts: TaskSummary, evaluation_id: str) -> list[dict[str, Any]]:
    tp = run.tasks[ts.name]
    samples = run.samples.filter(pl.col("task") == ts.name)
    metric_cols = [c for c in samples.columns if c not in _SAMPLE_COLUMNS]
    mid = _model(run)[0]
    out = []
    for srow in samples.sort("doc_id", maintain_order=True).iter_rows(named=True):
        doc_id, filt = int(srow["doc_id"]), str(srow["filter"])
        rec, insts = tp.docs.get(doc_id), tp.instances.get(doc_id, [])
        rows = [run.rows.get(i.instance_id) for i in insts]
        if rec is None or not insts or any(r is None for r in rows):
            continue
        prompt, target = insts[0].context, lm_eval_target(ts, rec, insts)
        output = _output(ts, [r for r in rows if r is not None], rec.choices)
        extracted = srow.get("filtered") if srow.get("filtered") is not None else output[0]
        meta = _strings({
            "plan_hash": run.header.plan_hash, "doc_hash": rec.doc_hash, "filter": filt,
            "request_hashes": [i.request_hash for i in insts], "instance_ids": [i.instance_id for i in insts],
            "prompt_hash": sha256(prompt), "target_hash": sha256(target),
        })  # fmt: skip
        values = {k: srow[k] for k in metric_cols if srow.get(k) is not None}
        values.update(json.loads(srow["items"]) if srow.get("items") else {})
        meta["lm_eval_metrics"] = json_text(values, default=str)
        if insts[0].media:  # the images the prompt shows (plans/plan/media.py), in order: their content identity
            meta["media"] = json_text([{k: m[k] for k in ("sha256", "mime", "width", "height")}
                                       for m in insts[0].media])  # fmt: skip
        n_in = [len(i.context_ids) for i in insts if i.context_ids is not None]
        scored: list[tuple[str | None, float]] = [(k, v) for k in values if (v := _number(values[k])) is not None]
        # a document whose values are all corpus-level items (bleu, perplexity, f1, ...) still gets its line,
        # with no aggregate result to point at (as EEE's lm-eval converter writes it)
        for metric, score in scored or [(None, 0.0)]:
            line: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION, "evaluation_id": evaluation_id, "model_id": mid,
                "evaluation_name": ts.name if filt == "none" else f"{ts.name}/{filt}",
                "sample_id": str(doc_id),
                "sample_hash": sha256(json.dumps({"raw": prompt, "reference": target}, sort_keys=True)),
                "interaction_type": "single_turn",
                "input": {"raw": prompt, "reference": [target], "choices": rec.choices},
                "output": {"raw": output},
                "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": str(extracted),
                                        "extraction_method": filt, "is_terminal": True}],
                "evaluation": {"score": score, "is_correct": score == 1.0},
                "metadata": meta,
            }  # fmt: skip
            if metric is not None:
                line["evaluation_result_id"] = result_id(metric, filt)
            out_tokens = [r.get("n_continuation_tokens") for r in rows if r is not None]
            if n_in and ts.output_type == "generate_until" and all(isinstance(x, int) for x in out_tokens):
                n_out = sum(int(x) for x in out_tokens if x is not None)
                line["token_usage"] = {"input_tokens": sum(n_in), "output_tokens": n_out,
                                       "total_tokens": sum(n_in) + n_out}  # fmt: skip
            out.append(line)
    return out


def write_eee(run: ExportRun, out_dir: Path, now: float | None = None) -> list[Path]:
    """Each task's aggregate and instance-level files under ``out_dir/data/...``; the files written."""
    stamp = str(int(now if now is not None else time.time()))
    mid, dev, name = _model(run)
    written: list[Path] = []
    for ts in run.header.tasks:
        if ts.name not in run.results.get("results", {}):
            continue
        fid = file_uuid(run, ts.name)
        rel = f"data/{COLLECTION}/{dev}/{name}"
        folder = out_dir / rel
        folder.mkdir(parents=True, exist_ok=True)
        evaluation_id = f"{ts.name}/{mid}/{stamp}"
        lines = instance_lines(run, ts, evaluation_id)
        text = "".join(json_text(x) + "\n" for x in lines)
        samples_rel = f"{rel}/{fid}_samples.jsonl"
        agg = eee_aggregate(run, ts, stamp, samples_rel, sha256(text), len(lines))
        agg_text = json_text(agg, indent=2, ensure_ascii=True) + "\n"
        for path, body in ((out_dir / samples_rel, text), (folder / f"{fid}.json", agg_text)):
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(body, encoding="utf-8")
            tmp.replace(path)
            written.append(path)
    return written
