"""Small MMLU tasks with clusters, for the clustered-stderr and power checks (``test_statistics.py``).

``write_mmlu_clusters(dest, data_dir)`` writes, from the shared MMLU test splits (the first ``DOCS`` documents
of each of ``SUBJECTS``, written under ``dest/data/``): one 0-shot task per subject (``mm_SUBJECT``, each
document its own cluster) in a group ``mm`` (weighted by size: its clusters are the subjects), and one task
``mm_mixed`` over the same documents, subject after subject, that names its cluster field
(``metadata.cluster_key: subject``). lm-eval's MMLU prompt (``conf/task/_defs/mmlu.yaml``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUBJECTS = ("anatomy", "astronomy", "virology")
DOCS = 4
GROUP, MIXED = "mm", "mm_mixed"
PROMPT = "{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\nD. {{choices[3]}}\nAnswer:"


def _task(name: str, data: Path, **extra: Any) -> dict[str, Any]:
    return {
        "task": name, "dataset_path": "json", "dataset_name": None,
        "dataset_kwargs": {"data_files": {"test": str(data)}}, "test_split": "test",
        "output_type": "multiple_choice", "doc_to_text": PROMPT, "doc_to_choice": ["A", "B", "C", "D"],
        "doc_to_target": "answer", "num_fewshot": 0,
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": 1.0, **extra},
    }  # fmt: skip


def write_mmlu_clusters(dest: Path, data_dir: Path) -> list[str]:
    """The YAMLs and their data in ``dest``; returns the names to run (the group and the mixed task)."""
    import yaml

    data = dest / "data"
    data.mkdir(parents=True, exist_ok=True)
    mixed: list[str] = []
    for s in SUBJECTS:
        lines = [
            x for x in (data_dir / "mmlu" / s / "test.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()
        ]
        rows = lines[:DOCS]
        assert all(json.loads(r)["subject"] == s for r in rows)
        (data / f"{s}.jsonl").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
        mixed += rows
        (dest / f"mm_{s}.yaml").write_text(yaml.safe_dump(_task(f"mm_{s}", data / f"{s}.jsonl")), encoding="utf-8")
    (data / "mixed.jsonl").write_text("".join(r + "\n" for r in mixed), encoding="utf-8")
    mixed_task = _task(MIXED, data / "mixed.jsonl", cluster_key="subject")
    (dest / f"{MIXED}.yaml").write_text(yaml.safe_dump(mixed_task), encoding="utf-8")
    group = {"group": GROUP, "task": [f"mm_{s}" for s in SUBJECTS], "metadata": {"version": 1},
             "aggregate_metric_list": [{"metric": "acc", "weight_by_size": True}]}  # fmt: skip
    (dest / f"{GROUP}.yaml").write_text(yaml.safe_dump(group), encoding="utf-8")
    return [GROUP, MIXED]
