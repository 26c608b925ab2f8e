"""Hostile tool-call replies through the whole ``lmeval score`` path (#64): a run whose answers are forged (the
replies a model could write: JSON and Python nested far past the recursion limit, an unclosed ``<tool_call>``
tag repeated over a million characters, a Markdown fence around 50,000 spaces) scores cleanly, each such reply as
unparsed, within a time limit the quadratic and cubic scans of before the fix ran far past (minutes), beside a
right call that still scores 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.compiler import compile_plan
from lmeval.plans import read_plan
from lmeval.plans.plan import write_plan
from lmeval.plans.results import RunManifest, polars_schema, write_manifest
from tests.compiler.test_tool_calls import hermes_model
from tests.hostile.corpus import env
from tests.plans.test_toolcall_replies import DEEP, deep_json, hermes
from tests.scorer.test_toolmatch import AREA, ONE, PERIM, call_text

RIGHT = {
    "hermes": call_text("area", {"base": 10, "height": 5}),
    "json": json.dumps({"name": "area", "parameters": {"base": 10, "height": 5}}),
    "pythonic": "[area(base=10, height=5)]",
}
HOSTILE = [
    ("hermes", "deep JSON", hermes(deep_json())),
    ("hermes", "deep JSON text of arguments", hermes('{"name": "area", "arguments": ' + json.dumps("[" * DEEP) + "}")),
    ("hermes", "unclosed tags", "<tool_call>" * 100_000),  # 1.1 million characters: minutes before the fix
    ("json", "deep list", "[" * DEEP + "]" * DEEP),
    ("json", "deep object", '{"a":' * DEEP + "1" + "}" * DEEP),
    ("json", "fence of spaces", "```" + " " * 50_000 + "x"),
    ("pythonic", "deep signs", "area(base=" + "-" * DEEP + "1)"),
    ("pythonic", "long dotted name", "a." * DEEP + "area(base=1)"),
    ("pythonic", "fence of spaces", "```" + " " * 50_000 + "x"),
]
TIME_LIMIT = 60.0  # seconds for the whole `lmeval score` (it takes a few)


def tool_task(tmp: Path, parser: str, answers: list[Any]) -> list[str]:
    """A tool-call task ``calls`` of one document per expected-calls value in ``answers`` (read by ``parser``),
    in an include folder under ``tmp`` with a model whose chat template takes tools: the compile overrides."""
    import yaml

    d = tmp / "tasks"
    d.mkdir()
    rows = [{"messages": [{"role": "user", "content": f"question {i}"}], "tools": [AREA, PERIM], "answer": a}
            for i, a in enumerate(answers)]  # fmt: skip
    (d / "calls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {"task": "calls", "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(d / "calls.jsonl")}},
           "test_split": "test", "output_type": "generate_until", "doc_to_messages": "messages",
           "doc_to_tools": "tools", "doc_to_target": "{{ {'calls': answer} | tojson }}", "tool_parser": parser,
           "generation_kwargs": {"until": [], "max_gen_toks": 64},
           "metric_list": [{"metric": "tool_call", "aggregation": "mean", "higher_is_better": True}]}  # fmt: skip
    (d / "calls.yaml").write_text(yaml.safe_dump(cfg))
    model = hermes_model(tmp / "model")
    return [f"run.include_path={d}", "run.tasks=[calls]", "run.apply_chat_template=true", f"model.path={model}"]


def _plan(tmp: Path, parser: str, n_docs: int) -> Path:
    plan = tmp / "plan.msgpack"
    write_plan(plan, *compile_plan(tool_task(tmp, parser, [ONE] * n_docs)))
    return plan


def forged_run(plan: Path, replies: list[str], rdir: Path) -> Path:
    """A results directory answering the plan's document ``i`` with ``replies[i]`` (what a fake backend run
    writes, the answers forged)."""
    p = read_plan(plan)
    rows = [{"instance_id": i.instance_id, "task": i.task, "doc_id": i.doc_id, "idx": i.idx,
             "request_type": i.request_type, "request_hash": i.request_hash, "response": replies[i.doc_id],
             "responses": [replies[i.doc_id]], "finish_reason": "stop"} for i in p.instances]  # fmt: skip
    rdir.mkdir()
    pl.DataFrame(rows, schema=polars_schema()).write_parquet(rdir / "part-00000.parquet")
    write_manifest(rdir, RunManifest(plan_hash=p.header.plan_hash, plan_path=str(plan), model={"name": "fake"},
                                     backend="fake"))  # fmt: skip
    return rdir


@pytest.mark.parametrize(("parser", "what", "reply"), HOSTILE, ids=[f"{p}-{w}" for p, w, _ in HOSTILE])
def test_hostile_replies_score_as_unparsed_in_time(parser: str, what: str, reply: str, tmp_path: Path) -> None:
    plan = _plan(tmp_path, parser, 2)
    rdir = forged_run(plan, [RIGHT[parser], reply], tmp_path / "results")
    try:
        p = subprocess.run(
            [sys.executable, "-m", "lmeval", "score", str(rdir), "--plan", str(plan), "--quiet"],
            env=env(), capture_output=True, text=True, timeout=TIME_LIMIT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"lmeval score did not return within {TIME_LIMIT} s")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-3000:]
    res = json.loads((rdir / "results.json").read_text())["results"]["calls"]
    assert res["tool_call,none"] == 0.5  # the right call of document 0
    assert res["tool_call_unparsed,none"] == 0.5  # the hostile reply of document 1
