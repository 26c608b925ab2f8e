"""Provenance, runs side by side: plan, model and engine settings, versions, hardware, timings, shards or
workers and reused Instances, from each run's manifest.json and results.json. Manifest fields this module
does not know are listed too, so what later versions record is never hidden."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from lmeval.report.html import esc, mapping
from lmeval.report.inputs import Run

_KNOWN = {
    "plan_hash", "plan_path", "model", "backend", "engine_args", "versions", "shard", "n_instances",
    "started", "finished", "stats", "hardware", "workers", "estimate",
}  # fmt: skip
_TIMINGS = (("load_ms", "model load"), ("scoring_ms", "scoring"), ("generation_ms", "generation"))
_COUNTS = ("planned", "executed", "reused", "resumed", "requests", "cached_prompt_tokens", "rescored")


def _kv(d: Any) -> str:
    if not isinstance(d, dict) or not d:
        return "" if not d else esc(json.dumps(d, sort_keys=True, default=str))
    return "<br>".join(
        f"<span class=k>{esc(k)}</span>=" + esc(v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
        for k, v in sorted(d.items(), key=lambda kv: str(kv[0]))
    )


def _seconds(ms: Any) -> str:
    return f"{ms / 1000:.1f} s" if isinstance(ms, (int, float)) and not isinstance(ms, bool) else ""


def _wall(m: dict[str, Any]) -> str:
    try:
        a = datetime.fromisoformat(str(m["started"]))
        b = datetime.fromisoformat(str(m["finished"]))
    except (KeyError, TypeError, ValueError):
        return ""
    return f"{(b - a).total_seconds():.0f} s"


def _model_rows(run: Run) -> dict[str, str]:
    m = mapping(run.manifest, "model")
    plan_model = run.plan.header.model.to_dict() if run.plan is not None else {}
    name = m.get("name") or plan_model.get("name") or ""
    return {
        "model": esc(name),
        "model path": esc(m.get("path") or ""),
        "revision": esc(m.get("revision") or ""),
        "dtype": esc(m.get("dtype") or ""),
        "max_model_len": esc(m.get("max_model_len") or ""),
        "tokenizer sha256": f'<span class="hash" title="{esc(m.get("tokenizer_hash") or "")}">'
        f"{esc(str(m.get('tokenizer_hash') or '')[:12])}</span>",
        "chat template": esc(str(plan_model.get("chat_template_hash") or "")[:12] or "none"),
        "add_bos_token": esc(m.get("add_bos_token", plan_model.get("add_bos_token", ""))),
    }


def rows_for(run: Run) -> dict[str, str]:
    m = run.manifest
    stats = mapping(m, "stats")
    ph = run.plan_hash
    out: dict[str, str] = {
        "results directory": esc(run.path),
        "plan hash": f'<span class="hash" title="{esc(ph)}">{esc(ph[:12])}</span>',
        "plan file": esc(run.plan_path) + ("" if run.plan is not None else ' <span class="warn">(not found)</span>'),
    }
    if run.plan is not None:
        h = run.plan.header
        out["plan"] = esc(f"{len(h.tasks)} tasks, {h.n_docs} docs, {h.n_instances} instances")
        cfg_run = mapping(h.config, "run")
        out["compile settings"] = _kv(
            {k: v for k, v in cfg_run.items() if v is not None and k not in ("out", "include_path", "data_dir")}
        )
    out.update(_model_rows(run))
    out["backend"] = esc(m.get("backend") or "")
    out["engine settings"] = _kv(m.get("engine_args"))
    out["versions"] = _kv(m.get("versions"))
    out["hardware"] = _kv(m.get("hardware")) if m.get("hardware") else '<span class="dim">not recorded</span>'
    out["shard / workers"] = esc(
        " ".join(x for x in (f"shard {m['shard']}" if m.get("shard") else "", _workers(m.get("workers"))) if x)
        or "one process"
    )
    out["started"] = esc(m.get("started") or "")
    out["finished"] = esc(m.get("finished") or "") or '<span class="warn">not finished</span>'
    out["wall time"] = esc(_wall(m))
    out["timings"] = esc(", ".join(f"{label} {_seconds(stats[k])}" for k, label in _TIMINGS if k in stats))
    out["instances"] = esc(
        ", ".join(f"{k.replace('_', ' ')} {stats[k]:,}" for k in _COUNTS if isinstance(stats.get(k), int))
        or str(m.get("n_instances", ""))
    )
    if mapping(m, "estimate"):
        out["estimate vs run"] = esc(_estimate_vs_run(mapping(m, "estimate"), stats))
    out["bootstrap iters"] = esc("" if run.results.bootstrap_iters is None else run.results.bootstrap_iters)
    extra = {k: v for k, v in m.items() if k not in _KNOWN}
    if extra:
        out["other manifest fields"] = _kv(extra)
    return out


def _estimate_vs_run(est: dict[str, Any], stats: dict[str, Any]) -> str:
    """The bill before the run (executor/estimate.py) beside what the run did: tokens to compute against the
    tokens computed, requests, the prefix cache's hits and the time the engine took."""

    def n(v: Any) -> str:
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else "?"

    gen = est.get("max_gen_tokens")
    bound = f" + at most {n(gen)} generated" if isinstance(gen, int) and gen else ""
    busy = sum(stats.get(k, 0) for k in ("scoring_ms", "generation_ms") if isinstance(stats.get(k), int))
    return (
        f"tokens to compute {n(est.get('to_compute'))}{bound} (blocks of {n(est.get('block_size'))}), computed "
        f"{n(stats.get('computed_tokens'))}; requests {n(est.get('requests'))}, sent {n(stats.get('requests'))}; "
        f"prefix-cache hits {n(stats.get('cached_prompt_tokens', 0))} prompt tokens; engine time {_seconds(busy)}"
    )


def _workers(w: Any) -> str:
    if w is None or w == "" or w == {}:
        return ""
    if isinstance(w, int):
        return f"{w} workers"
    return "workers " + json.dumps(w, sort_keys=True, default=str)


def provenance_table(runs: list[Run], baseline: int) -> str:
    per = [rows_for(r) for r in runs]
    keys: list[str] = []
    for p in per:
        keys.extend(k for k in p if k not in keys)
    head = "".join(
        f'<th class="run run{r.index % 8}">{esc(r.label)}{" (baseline)" if r.index == baseline else ""}</th>'
        for r in runs
    )
    out = [f'<table class="prov"><thead><tr><th></th>{head}</tr></thead><tbody>']
    for k in keys:
        vals = [p.get(k, "") for p in per]
        differ = len(runs) > 1 and len(set(vals)) > 1 and k not in ("results directory", "started", "finished")
        cls = ' class="differs"' if differ else ""
        out.append(f"<tr{cls}><th>{esc(k)}</th>" + "".join(f"<td>{v}</td>" for v in vals) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)
