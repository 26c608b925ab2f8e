"""An MMMU subject made at test time, fixed replies for it, and lm-eval 0.4.13 scoring those replies itself.

``make_subject(root)`` writes ``root/MMMU/Art/validation.jsonl`` (the local layout ``run.data_dir`` reads for
lm-eval's ``mmmu_val_art``: one small drawn PNG per question, 2 to 6 options, a few open questions).
``reply_for(doc_id)`` is the fixed reply to each document; most name no option, so MMMU's ``process_results``
picks one with ``random.choice``.

``lm_eval_scores(data, scratch)`` runs this file as a script in a fresh process (as ``lm_eval --tasks
mmmu_val_art --seed 1234`` runs: lmeval's default ``run.seed`` is lm-eval's ``--seed 1234``): lm-eval's
``simple_evaluate`` with a stub multimodal LM that answers each request with ``reply_for`` of its document,
``datasets.load_dataset`` answered from the local files (image columns cast to ``datasets.Image``). lm-eval
loads, seeds and scores the task itself, so every draw it makes from the global ``random`` is its own; the
result is its per-document ``acc`` in document order and its aggregate.

``lm_eval_draws(task_dir, task, seed, scratch)`` does the same for a task of one's own (``--include_path
task_dir``, no data mocked) at ``--seed seed``, replying ``reply_for`` too: its per-document metric values.

    python tests/scorer/mmmu_lm_eval.py SPEC.json OUT.json      # what both run
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

TASK, SUBJECT, SEED = "mmmu_val_art", "Art", 1234
IMAGE_FIELDS = [f"image_{i}" for i in range(1, 8)]
OPTIONS = ["Oil on canvas", "Tempera", "Fresco", "Woodcut", "Etching", "Gouache"]
NO_OPTION = ["I cannot tell from this picture.", "", "Hmm.", "It depends on the light and the frame used here"]


def make_subject(root: Path, n: int = 40, seed: int = 7) -> Path:
    """``root/MMMU/Art/validation.jsonl`` and its images; returns ``root`` (a ``run.data_dir``)."""
    from PIL import Image, ImageDraw

    rnd = random.Random(seed)
    folder = root / "MMMU" / SUBJECT
    (folder / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        img = Image.new("RGB", (24, 24), (255, 255, 255))
        ImageDraw.Draw(img).ellipse([4, 4, 20, 20], fill=(rnd.randrange(256), rnd.randrange(256), 90))
        rel = f"images/q{i}.png"
        img.save(folder / rel, format="PNG")
        mc = i % 7 != 6
        k = 2 + i % 5
        row: dict[str, Any] = {"id": f"validation_{SUBJECT}_{i + 1}"}
        row.update({f: ({"bytes": None, "path": rel} if f == "image_1" else None) for f in IMAGE_FIELDS})
        row.update({"question": f"Which medium is shown in <image 1>? (question {i})",
                    "options": str(OPTIONS[:k]) if mc else "[]", "explanation": "", "img_type": "['Paintings']",
                    "answer": "ABCDEF"[rnd.randrange(k)] if mc else "oil",
                    "topic_difficulty": "Easy", "question_type": "multiple-choice" if mc else "open",
                    "subfield": SUBJECT})  # fmt: skip
        rows.append(row)
    (folder / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def reply_for(doc_id: int) -> str:
    """Four in five replies name no option (MMMU's random fallback); the others name one: ``(B)``."""
    return "(B)" if doc_id % 5 == 4 else NO_OPTION[doc_id % len(NO_OPTION)]


def lm_eval_scores(data: Path, scratch: Path) -> dict[str, Any]:
    """lm-eval's own per-document ``acc`` (document order) and aggregate for the replies, in a fresh process."""
    from tests.support import run_child

    scratch.mkdir(parents=True, exist_ok=True)
    out = run_child(__file__, {"data": str(data)}, scratch)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def lm_eval_draws(task_dir: Path, task: str, seed: int, scratch: Path) -> list[dict[str, Any]]:
    """lm-eval's per-document metric values (document order) for ``task`` under ``task_dir`` at ``--seed seed``."""
    from tests.support import run_child

    scratch.mkdir(parents=True, exist_ok=True)
    out = run_child(__file__, {"include": str(task_dir), "task": task, "seed": seed}, scratch)
    metrics: list[dict[str, Any]] = json.loads(out.read_text())["metrics"]
    return metrics


def _child(spec_path: str, out_path: str) -> None:
    from unittest import mock

    import datasets
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    spec = json.loads(Path(spec_path).read_text())
    data = Path(spec.get("data") or ".")
    task, seed = spec.get("task", TASK), spec.get("seed", SEED)
    real = datasets.load_dataset

    def load_dataset(path: str, name: str | None = None, **kwargs: Any) -> datasets.DatasetDict:
        assert (path, name) == ("MMMU/MMMU", SUBJECT), (path, name)
        base = data / "MMMU" / SUBJECT
        dd = real("json", data_files={p.stem: str(p) for p in sorted(base.glob("*.jsonl"))})
        out = {}
        for split, ds in dd.items():
            for f in IMAGE_FIELDS:
                ds = ds.map(
                    lambda r, f=f: {f: None if r[f] is None else {"bytes": None, "path": str(base / r[f]["path"])}}
                )
                ds = ds.cast_column(f, datasets.Image())
            out[split] = ds
        return datasets.DatasetDict(out)

    class Replies(LM):
        MULTIMODAL = True

        def loglikelihood(self, requests: Any) -> Any:
            raise NotImplementedError

        def loglikelihood_rolling(self, requests: Any) -> Any:
            raise NotImplementedError

        def generate_until(self, requests: Any) -> list[str]:
            return [reply_for(r.doc_id) for r in requests]

    seeds = {"random_seed": seed, "numpy_random_seed": seed, "torch_random_seed": seed, "fewshot_random_seed": seed}
    if "include" in spec:  # a task of one's own, on its own data
        manager = TaskManager(include_path=spec["include"])
        res = simple_evaluate(model=Replies(), tasks=[task], task_manager=manager, log_samples=True, **seeds)
        samples = sorted(res["samples"][task], key=lambda s: s["doc_id"])
        metrics = [{k: s[k] for k in s["metrics"]} for s in samples]
        Path(out_path).write_text(json.dumps({"metrics": metrics}))
        return
    with mock.patch.object(datasets, "load_dataset", load_dataset):
        res = simple_evaluate(model=Replies(), tasks=[task], log_samples=True, **seeds)
    samples = sorted(res["samples"][task], key=lambda s: s["doc_id"])
    Path(out_path).write_text(json.dumps({"acc": [s["acc"] for s in samples],
                                          "replies": [s["resps"][0][0] for s in samples],
                                          "results": res["results"][task]}))  # fmt: skip


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
