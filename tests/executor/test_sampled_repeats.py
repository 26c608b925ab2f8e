"""Self-consistency on vLLM's CPU engine: sampled repeats with per-request seeds, majority vote, run twice.

A gsm8k-cot-self-consistency-style task (``repeats: 8``, ``do_sample: true``, regex + ``majority_vote``
filters) with 32 shots: its prompts (about 3000 tokens each) together exceed the CPU engine's 4096-token step
budget, so with chunked prefill vLLM prefills some in chunks and crashes rewinding their seeded CPU generators
("CPU Generator does not use offset"; this very task with ``+model.engine.enable_chunked_prefill=true``).
Two ``lmeval run`` processes must give identical generations and scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.plans.plan import InstanceRecord, PlanReader

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("LMEVAL_DATA_DIR", REPO.parent / "shared" / "data"))
REPEATS = 8
LIMIT = 3
REGEX = {"function": "regex", "regex_pattern": "(-?[0-9]+)", "group_select": -1}


def _task_yaml(d: Path) -> None:
    import yaml

    cfg: dict[str, Any] = {
        "task": "sc_gsm8k",
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {
            "data_files": {"train": str(DATA / "gsm8k" / "train.jsonl"), "test": str(DATA / "gsm8k" / "test.jsonl")}
        },  # fmt: skip
        "output_type": "generate_until",
        "training_split": "train",
        "fewshot_split": "train",
        "test_split": "test",
        "doc_to_text": "Q: {{question}}\nA:",
        "doc_to_target": "{{answer.split('#### ')[-1]}}",
        "num_fewshot": 32,
        "repeats": REPEATS,
        "generation_kwargs": {"until": ["Q:", "\n\n"], "do_sample": True, "temperature": 1.0, "max_gen_toks": 24},
        "filter_list": [
            {"name": "score-first", "filter": [REGEX, {"function": "take_first"}]},
            {"name": f"maj@{REPEATS}", "filter": [REGEX, {"function": "majority_vote"}, {"function": "take_first"}]},
            {
                "name": "maj@4",
                "filter": [
                    {"function": "take_first_k", "k": 4},
                    REGEX,
                    {"function": "majority_vote"},
                    {"function": "take_first"},
                ],  # fmt: skip
            },
        ],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
    }
    (d / "sc_gsm8k.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def _run(work: Path, name: str) -> Path:
    out, plan = work / name, work / f"{name}.msgpack"
    cmd = [sys.executable, "-m", "lmeval", "run", f"run.include_path={work / 'tasks'}", "run.tasks=[sc_gsm8k]",
           f"run.limit={LIMIT}", "--out", str(out), "--plan-out", str(plan), "--no-progress"]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("self-consistency")
    (work / "tasks").mkdir()
    _task_yaml(work / "tasks")
    return _run(work, "a"), _run(work, "b")


def _responses(out: Path) -> dict[tuple[int, int], list[str]]:
    from lmeval.plans.results import read_results

    df = read_results(out).sort(["doc_id", "idx"])
    return {(d, i): list(r) for d, i, r in df.select(["doc_id", "idx", "responses"]).iter_rows()}


def test_prompts_would_be_prefilled_in_chunks(runs: tuple[Path, Path]) -> None:
    """The case that crashed: the prompts together exceed vLLM's 4096-token CPU step budget; the engine ran
    without chunked prefill."""
    out = runs[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine_args"]["enable_chunked_prefill"] is False
    with PlanReader(out.parent / "a.msgpack") as r:
        insts = [x for x in r if isinstance(x, InstanceRecord)]
    assert len(insts) == LIMIT and all(x.repeats == REPEATS for x in insts)
    assert sum(len(x.context_ids or []) for x in insts) > 4096
    assert all(x.generation_kwargs and x.generation_kwargs["do_sample"] for x in insts)


def test_two_runs_identical(runs: tuple[Path, Path]) -> None:
    a, b = (_responses(o) for o in runs)
    assert a == b
    assert len(a) == LIMIT
    for resps in a.values():
        assert len(resps) == REPEATS
        assert len(set(resps)) > 1  # really sampled: the repeats differ
    ra, rb = (json.loads((o / "results.json").read_text()) for o in runs)
    assert ra["results"] == rb["results"]
    res = ra["results"]["sc_gsm8k"]
    for f in ("score-first", f"maj@{REPEATS}", "maj@4"):
        assert f"exact_match,{f}" in res
    sa, sb = (pl.read_parquet(o / "samples.parquet").sort(["doc_id", "filter"]) for o in runs)
    assert sa.select(["doc_id", "filter", "filtered"]).equals(sb.select(["doc_id", "filter", "filtered"]))


def test_majority_vote_is_the_most_common_answer(runs: tuple[Path, Path]) -> None:
    import re
    from collections import Counter

    resps = _responses(runs[0])
    samples = pl.read_parquet(runs[0] / "samples.parquet").filter(pl.col("filter") == f"maj@{REPEATS}")
    for doc_id, filtered in samples.select(["doc_id", "filtered"]).iter_rows():
        answers = []
        for text in resps[(doc_id, 0)]:
            found = re.findall(REGEX["regex_pattern"], text)
            answers.append(found[-1] if found else "[invalid]")
        counts = Counter(answers)
        assert counts[filtered] == max(counts.values()), (doc_id, filtered, counts)
