"""Prompt-building edge cases cross-checked against lm-eval 0.4.13's own ConfigurableTask (installed in the
test environment): gen_prefix, a templated description, fewshot_config overrides, list targets, the
leakage guard with fewshot_split == test_split, system instruction, chat template multi/single turn."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from lmeval import compiler

pytestmark = pytest.mark.lmeval_parity

VARIANTS: dict[str, dict[str, Any]] = {
    "gp_mc": dict(
        output_type="multiple_choice",
        doc_to_text="Question: {{question}}",
        gen_prefix="Answer:",
        doc_to_target="{{choices.label.index(answerKey)}}",
        doc_to_choice="{{choices.text}}",
        description="Science questions about {{id[:3]}}.\n\n",
    ),
    "gp_gen": dict(
        output_type="generate_until",
        doc_to_text="Q: {{question}}\n",
        gen_prefix="A:",
        doc_to_target="{{answerKey}}",
        fewshot_config={
            "doc_to_text": "Example: {{question}}",
            "target_delimiter": " => ",
            "fewshot_delimiter": "\n---\n",
        },
    ),
    "gp_list": dict(
        output_type="generate_until",
        doc_to_text="{{question}}",
        doc_to_target="{{[answerKey, 'x']}}",
        target_delimiter="\n",
        generation_kwargs={"max_gen_toks": 5},
    ),
    "gp_ll": dict(
        output_type="loglikelihood", doc_to_text="{{question}} ", doc_to_target="{{answerKey}}", fewshot_split="test"
    ),
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Any]:
    from tests.compiler.conftest import data_dir

    root = tmp_path_factory.mktemp("edge")
    src = data_dir() / "arc_easy"
    for split, n in (("train", 40), ("test", 10)):
        lines = (src / f"{split}.jsonl").read_text().splitlines()[:n]
        (root / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    base = {
        "dataset_path": "json",
        "training_split": "train",
        "test_split": "test",
        "dataset_kwargs": {"data_files": {s: str(root / f"{s}.jsonl") for s in ("train", "test")}},
    }
    tasks = root / "tasks"
    tasks.mkdir()
    for name, v in VARIANTS.items():
        (tasks / f"{name}.yaml").write_text(yaml.safe_dump({"task": name, **base, **v}))
    # the chat side of the oracle is lm-eval's own HFLM.apply_chat_template on the tiny model (not lmeval's)
    from lm_eval.models.huggingface import HFLM

    from lmeval.common.tinymodel import ensure_tiny_model

    logging.disable(logging.WARNING)
    try:
        lm = HFLM(pretrained=str(ensure_tiny_model()), device="cpu", batch_size=1)
    finally:
        logging.disable(logging.NOTSET)
    return tasks, base, lm


@pytest.mark.parametrize("chat", [None, "multi", "single"])
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_same_requests_as_lmeval(name: str, chat: str | None, setup: tuple[Path, dict[str, Any], Any]) -> None:
    from lm_eval.api.task import ConfigurableTask

    tasks, base, lm = setup
    ov = [f"run.include_path={tasks}", f"run.tasks=[{name}]", "run.num_fewshot=3", "run.system_instruction=SYS"]
    if chat:
        ov += ["run.apply_chat_template=true", f"run.fewshot_as_multiturn={'true' if chat == 'multi' else 'false'}"]
    _, recs = compiler.compile_plan(ov)
    ours = [(r.doc_id, r.idx, r.request_type, r.arguments) for r in recs if r.kind == "instance"]

    logging.disable(logging.WARNING)
    try:
        t = ConfigurableTask(config={"task": name, **base, **VARIANTS[name]})
        t.set_config("num_fewshot", 3)
        t.set_fewshot_seed(1234)
        t.build_all_requests(
            apply_chat_template=bool(chat),
            fewshot_as_multiturn=chat == "multi",
            chat_template=lm.apply_chat_template if chat else None,
            system_instruction="SYS",
        )
    finally:
        logging.disable(logging.NOTSET)
    theirs = [(i.doc_id, i.idx, i.request_type, i.arguments) for i in t.instances]
    assert sorted(ours, key=lambda x: (x[0], x[1])) == sorted(theirs, key=lambda x: (x[0], x[1]))
