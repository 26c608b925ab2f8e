"""Task YAMLs for the Llama-style comparison and the lm-eval side of it (``lm_eval --model hf``, offline).

``write_tasks(dest, data_dir)`` writes lm-eval task YAMLs (plus the ``process_results`` module one of them
names with ``!function``) that both sides read unchanged: ``lmeval run run.include_path=DEST`` and
lm-eval's ``TaskManager(include_path=DEST)``. ``reference(model, tasks_dir, limit, settings)`` runs lm-eval
0.4.13's ``HFLM`` (what ``lm_eval --model hf --model_args pretrained=DIR,dtype=float32[,add_bos_token=..]
--device cpu --batch_size 1 --log_samples`` builds) once per setting in one child process (this file as
a script), from a scratch directory outside any repository, and returns its results and logged samples.

    .venv/bin/python tests/e2e/bos_ref.py SPEC.json OUT.json     # what ``reference`` runs
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support import plain, run_child

REPO = Path(__file__).resolve().parents[2]

UTILS = '''"""process_results of a wikitext-style task: word and byte counts of the page (lm-eval's wikitext rule)."""
import re


def process_results(doc, results):
    (loglikelihood,) = results
    page = doc["answer"]
    n_words = len(re.split(r"\\s+", page))
    n_bytes = len(page.encode("utf-8"))
    return {
        "word_perplexity": (loglikelihood, n_words),
        "byte_perplexity": (loglikelihood, n_bytes),
        "bits_per_byte": (loglikelihood, n_bytes),
    }
'''


def task_configs(data_dir: Path) -> dict[str, dict[str, Any]]:
    def files(sub: str, *splits: str) -> dict[str, Any]:
        return {"data_files": {s: str(data_dir / sub / f"{s}.jsonl") for s in splits}}

    arc = {
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": files("arc_easy", "test"),
        "test_split": "test",
    }
    pages = {
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": files("gsm8k", "test"),
        "test_split": "test",
        "output_type": "loglikelihood_rolling",
        "doc_to_text": "",
        "doc_to_target": "{{answer}}",
    }
    ll_metrics = [
        {"metric": "perplexity", "aggregation": "perplexity", "higher_is_better": False},
        {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
    ]
    return {
        # multiple choice (piqa's prompt)
        "bos_piqa": {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": files("piqa", "validation"),
            "validation_split": "validation",
            "output_type": "multiple_choice",
            "doc_to_text": "Question: {{goal}}\nAnswer:",
            "doc_to_target": "label",
            "doc_to_choice": "{{[sol1, sol2]}}",
            "metric_list": [
                {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
                {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
            ],
        },  # fmt: skip
        # loglikelihood with a perplexity metric (lambada's shape: the last word given the rest)
        "bos_lastword": {
            **arc,
            "output_type": "loglikelihood",
            "doc_to_text": "{{question.split(' ')[:-1] | join(' ')}}",
            "doc_to_target": "{{question.split(' ')[-1]}}",
            "metric_list": ll_metrics,
        },  # fmt: skip
        # loglikelihood of a whole text with an empty context: conditioned on the prefix token
        # (no perplexity: exp of a whole question's negative log-likelihood under a random model overflows)
        "bos_uncond": {
            **arc,
            "output_type": "loglikelihood",
            "doc_to_text": "",
            "target_delimiter": "",
            "doc_to_target": "{{question}}",
            "metric_list": ll_metrics[1:],
        },  # fmt: skip
        # rolling log-likelihood: word/byte perplexity and bits per byte (the default process_results)
        "bos_rolling": dict(pages),
        # the same through a process_results function (wikitext's shape): needs --trust-code on our side
        "bos_rolling_pr": {
            **pages,
            "process_results": "!function bos_utils.process_results",
            "metric_list": [{"metric": "word_perplexity"}, {"metric": "byte_perplexity"}, {"metric": "bits_per_byte"}],
        },  # fmt: skip
        # generation with regex filters (gsm8k's prompt, filters and stop strings)
        "bos_gsm8k": {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": files("gsm8k", "train", "test"),
            "training_split": "train",
            "fewshot_split": "train",
            "test_split": "test",
            "output_type": "generate_until",
            "num_fewshot": 2,
            "doc_to_text": "Question: {{question}}\nAnswer:",
            "doc_to_target": "{{answer}}",
            "generation_kwargs": {
                "until": ["Question:", "</s>", "<|im_end|>"],
                "do_sample": False,
                "temperature": 0.0,
                "max_gen_toks": 32,
            },
            "metric_list": [
                {
                    "metric": "exact_match",
                    "aggregation": "mean",
                    "higher_is_better": True,
                    "ignore_case": True,
                    "ignore_punctuation": False,
                    "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"],
                }
            ],
            "filter_list": [
                {
                    "name": "strict-match",
                    "filter": [
                        {"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                        {"function": "take_first"},
                    ],
                },
                {
                    "name": "flexible-extract",
                    "filter": [
                        {"function": "regex", "group_select": -1, "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                        {"function": "take_first"},
                    ],
                },
            ],
        },  # fmt: skip
    }


def write_tasks(dest: Path, data_dir: Path) -> list[str]:
    """The task YAMLs (and ``bos_utils.py``) in ``dest``; returns the task names."""
    import yaml

    dest.mkdir(parents=True, exist_ok=True)
    (dest / "bos_utils.py").write_text(UTILS)
    names = []
    for name, cfg in task_configs(data_dir).items():
        text = yaml.safe_dump({"task": name, **cfg}, sort_keys=False)
        # lm-eval's !function tag must stay a tag, not a quoted string
        text = text.replace("'!function bos_utils.process_results'", "!function bos_utils.process_results")
        (dest / f"{name}.yaml").write_text(text)
        names.append(name)
    return names


def reference(model: Path, tasks_dir: Path, tasks: list[str], limit: int, settings: dict[str, bool | None]) -> dict:
    """lm-eval's results and samples per setting name (``add_bos_token`` value, None = unset)."""
    spec = {"model": str(model), "tasks_dir": str(tasks_dir), "tasks": tasks, "limit": limit, "settings": settings}
    with tempfile.TemporaryDirectory(prefix="lmeval-bos-lm_eval-") as scratch:
        return dict(json.loads(run_child(__file__, spec, scratch).read_text()))


def child(spec_path: str, out_path: str) -> None:
    from lm_eval.evaluator import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    spec = json.loads(Path(spec_path).read_text())
    tm = TaskManager(include_path=spec["tasks_dir"], include_defaults=False)  # self-contained YAMLs: no built-in index
    out: dict[str, Any] = {}
    for name, add_bos in spec["settings"].items():
        kw = {} if add_bos is None else {"add_bos_token": add_bos}
        lm = HFLM(pretrained=spec["model"], dtype="float32", device="cpu", batch_size=1, **kw)
        res = simple_evaluate(
            model=lm,
            tasks=spec["tasks"],
            limit=spec["limit"],
            log_samples=True,
            task_manager=tm,
            bootstrap_iters=100000,
        )
        assert res is not None
        samples = {
            t: [{k: plain(v) for k, v in s.items() if k != "doc"} for s in rows] for t, rows in res["samples"].items()
        }
        out[name] = {"results": plain(res["results"]), "samples": samples}
    Path(out_path).write_text(json.dumps(out))


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2])
