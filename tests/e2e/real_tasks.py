"""lm-eval 0.4.13's own task YAMLs, pointed at local data, for the real-model comparison (both sides read them).

``write_real_tasks(dest, data_dir, sizes)`` copies, from the installed lm-eval's ``tasks/`` folder:

- ``arc/arc_easy.yaml`` as ``real_arc_easy`` (multiple choice, 0-shot),
- ``gsm8k/gsm8k.yaml`` as ``real_gsm8k`` (5-shot generation, strict-match and flexible-extract) and again as
  ``real_gsm8k_chat`` (the same YAML; run with a chat template and multiturn few-shot),
- ``wikitext/wikitext.yaml`` with its ``preprocess_wikitext.py`` as ``real_wikitext`` (loglikelihood_rolling:
  word_perplexity, byte_perplexity, bits_per_byte through its ``process_results``), on a small document-level
  dataset built here from the shared gsm8k test split (each document: a question, a blank line, its worked
  answer), since the shared data has no wikitext,

with ``dataset_path: json``, ``dataset_name: null`` and ``dataset_kwargs.data_files``. Each task's test split
is the first ``sizes[task]`` documents of the shared file, written to ``dest/data/`` (the documents a
``--limit`` would take: same prompts, as lm-eval's ``--limit N`` gives the first N documents), so one run
covers every task at its own size; training splits (the few-shot pools) are the shared files unchanged.
``num_fewshot`` and ``generation_kwargs.max_gen_toks`` are written into the YAMLs when given.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROLLING_SOURCE = ("gsm8k", "test")


@dataclass(frozen=True)
class TaskSize:
    docs: int
    num_fewshot: int | None = None
    max_gen_toks: int | None = None


def _lm_eval_tasks() -> Path:
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks"


def _head(src: Path, dst: Path, n: int) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
        k = 0
        for line in f:
            if not line.strip():
                continue
            if k >= n:
                break
            g.write(line)
            k += 1
    return dst


def _pages(src: Path, dst: Path, n: int) -> Path:
    """Documents for the rolling task: ``{"page": question + "\\n\\n" + answer}`` of the first ``n`` rows."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with open(src, encoding="utf-8") as f:
        for line in f:
            if line.strip() and len(rows) < n:
                r = json.loads(line)
                rows.append({"page": f"{r['question']}\n\n{r['answer']}"})
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return dst


def _yaml_dump(cfg: dict[str, Any]) -> str:
    import yaml

    text = yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)
    # lm-eval's !function tags must stay tags, not quoted strings
    for fn in ("preprocess_wikitext.wikitext_detokenizer", "preprocess_wikitext.process_results"):
        text = text.replace(f"'!function {fn}'", f"!function {fn}")
    return text


def write_real_tasks(dest: Path, data_dir: Path, sizes: dict[str, TaskSize]) -> list[str]:
    """The YAMLs (and local data) in ``dest``; returns the task names written (``sizes``' keys, in order)."""
    import yaml

    src = _lm_eval_tasks()
    data = dest / "data"
    dest.mkdir(parents=True, exist_ok=True)
    names = []
    for name, size in sizes.items():
        if name == "real_arc_easy":
            cfg = yaml.safe_load((src / "arc" / "arc_easy.yaml").read_text())
            files = {
                "train": str(data_dir / "arc_easy" / "train.jsonl"),
                "validation": str(data_dir / "arc_easy" / "validation.jsonl"),
                "test": str(_head(data_dir / "arc_easy" / "test.jsonl", data / f"{name}_test.jsonl", size.docs)),
            }
        elif name in ("real_gsm8k", "real_gsm8k_chat"):
            cfg = yaml.safe_load((src / "gsm8k" / "gsm8k.yaml").read_text())
            files = {
                "train": str(data_dir / "gsm8k" / "train.jsonl"),
                "test": str(_head(data_dir / "gsm8k" / "test.jsonl", data / f"{name}_test.jsonl", size.docs)),
            }
        elif name == "real_wikitext":
            cfg = _wikitext_cfg(src)
            shutil.copy(src / "wikitext" / "preprocess_wikitext.py", dest / "preprocess_wikitext.py")
            pages = str(_pages(data_dir / ROLLING_SOURCE[0] / f"{ROLLING_SOURCE[1]}.jsonl",
                               data / f"{name}_pages.jsonl", size.docs))  # fmt: skip
            files = {"train": pages, "validation": pages, "test": pages}
        else:
            raise ValueError(f"no recipe for task {name}")
        cfg["task"] = name
        cfg.pop("tag", None)
        cfg["dataset_path"] = "json"
        cfg["dataset_name"] = None
        cfg["dataset_kwargs"] = {"data_files": files}
        if size.num_fewshot is not None:
            cfg["num_fewshot"] = size.num_fewshot
        if size.max_gen_toks is not None:
            cfg["generation_kwargs"] = {**cfg["generation_kwargs"], "max_gen_toks": size.max_gen_toks}
        (dest / f"{name}.yaml").write_text(_yaml_dump(cfg), encoding="utf-8")
        names.append(name)
    return names


def _wikitext_cfg(src: Path) -> dict[str, Any]:
    """lm-eval's wikitext.yaml as data, its ``!function`` values kept as ``"!function NAME"`` strings."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    return dict(yaml.load((src / "wikitext" / "wikitext.yaml").read_text(), Loader=Loader))  # noqa: S506
