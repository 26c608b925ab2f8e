"""One vLLM run of SmolLM2 shared by the tests that need one (one engine start, the costly part on 2 cores):
arith (``LIMIT`` documents), the capital-of-France JSONL spec task, and ``gsm8k_r4``: lmeval's gsm8k YAML on the
first ``R4_DOCS`` shared gsm8k test documents (written to the run's folder, read in place otherwise), 0-shot,
``repeats: 4`` sampled at temperature 0.8 with ``sample_scores: [mean, majority, pass@1, pass@4]`` (#40)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from lmeval.compiler.config import CONF_DIR
from tests.support import cli_in_process as cli
from tests.support import data_dir

LIMIT = 24
CAPITAL = {"task_id": "capital", "category": "classification", "prompt": "The capital of France is",
           "targets": ["Paris."], "metric_name": "exact_match", "post_process": "strip_whitespace"}  # fmt: skip
R4, R4_DOCS, R4_REPEATS = "gsm8k_r4", 3, 4
R4_SCORES = ["mean", "majority", "pass@1", "pass@4"]


def write_r4_task(dest: Path) -> Path:
    """``dest/gsm8k_r4.yaml`` and its test split (the first ``R4_DOCS`` shared documents)."""
    dest.mkdir(parents=True, exist_ok=True)
    cfg = yaml.safe_load((CONF_DIR / "task" / "gsm8k.yaml").read_text())
    src = data_dir() / "gsm8k"
    with open(src / "test.jsonl", encoding="utf-8") as f:
        head = [line for line in f if line.strip()][:R4_DOCS]
    (dest / "gsm8k_r4_test.jsonl").write_text("".join(head), encoding="utf-8")
    files = {"train": str(src / "train.jsonl"), "test": str(dest / "gsm8k_r4_test.jsonl")}
    cfg.update(task=R4, dataset_path="json", dataset_name=None, dataset_kwargs={"data_files": files}, num_fewshot=0,
               repeats=R4_REPEATS, sample_scores=R4_SCORES)  # fmt: skip
    cfg.pop("tag", None)
    cfg["generation_kwargs"] = {**cfg["generation_kwargs"], "do_sample": True, "temperature": 0.8, "max_gen_toks": 24}
    (dest / f"{R4}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return dest


def run_smollm2(work: Path) -> Path:
    """The run's results folder (``lmeval run``, scored)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    spec = work / "capital.jsonl"
    spec.write_text(json.dumps(CAPITAL) + "\n")
    tasks = write_r4_task(work / "tasks")
    out = work / "results"
    rc, _, err = cli("run", "+task=[arith,jsonl]", f"task.jsonl.path={spec}", f"run.tasks=[{R4}]",
                     f"run.include_path={tasks}", f"run.limit={LIMIT}", "model=smollm2", "--out", str(out),
                     "--no-progress")  # fmt: skip
    assert rc == 0, err
    return out
