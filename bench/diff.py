"""Benchmark ``lmeval diff`` on full MMLU 5-shot plans (57 subjects, 14042 docs, 56168 Instances).

Two pairs of plans:
- **constructed**: written with ``plans.io.write_plan`` from the real MMLU rows in the data directory, rendered
  in lm-eval's MMLU layout with token ids from the tiny reference tokenizer; the new plan changes one
  subject's description and another subject's few-shot seed (random sampler, so the examples move).
- **compiled** (when ``compiler.compile_plan`` works): ``+task=mmlu run.num_fewshot=5`` compiled twice, the
  second time with a changed description for one subject and a changed few-shot seed for another, passed
  as overrides (see ``COMPILED_OVERRIDES``).

For each pair: time of ``diff_plans`` (hash verification included), of the full CLI process, and of an
identical-plan diff; checks that exactly the two subjects are reported with the right causes. Prints a table
and writes ``bench/results/diff.md``.

    .venv/bin/python bench/diff.py [--data-dir DIR] [--skip-compiled]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

from lmeval.diff import diff_plans  # noqa: E402
from lmeval.plans.plan import (  # noqa: E402
    DocRecord,
    GroupSummary,
    InstanceRecord,
    ModelInfo,
    PlanHeader,
    TaskSummary,
    content_hash,  # noqa: E402
    instance_id_for,
    request_hash_of,
    write_plan,  # noqa: E402
)

LETTERS = ["A", "B", "C", "D"]
DESC_SUBJECT = "anatomy"
SEED_SUBJECT = "astronomy"
# The compiled pair: the mmlu group's definition (conf/task/_defs/mmlu.yaml) is copied with two edits and
# passed as task.mmlu.definition=COPY: anatomy's description changes, and astronomy's few-shot selection
# moves. lm-eval's few-shot seed is a run option, not a task field, and MMLU's first_n sampler ignores it, so
# astronomy switches to the seeded default sampler instead (the constructed pair changes the seed itself).
COMPILED_OVERRIDES = ["+task=mmlu", "run.num_fewshot=5"]
MMLU_DEF = ROOT / "conf" / "task" / "_defs" / "mmlu.yaml"


def changed_mmlu_definition(out: Path) -> Path:
    text = MMLU_DEF.read_text(encoding="utf-8")
    old_desc = f"questions (with answers) about {DESC_SUBJECT}.\\n\\n"
    new_desc = f"questions, each with answers, about {DESC_SUBJECT}.\\n\\n"
    seed_at = f"    dataset_name: {SEED_SUBJECT}\n"
    if text.count(old_desc) != 1 or text.count(seed_at) != 1:
        raise RuntimeError(f"{MMLU_DEF}: layout changed; update bench/diff.py's edits")
    text = text.replace(old_desc, new_desc).replace(seed_at, seed_at + "    fewshot_config:\n      sampler: default\n")
    out.write_text(text, encoding="utf-8")
    return out


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def _fmt(row: dict[str, Any]) -> str:
    return (
        row["question"].strip()
        + "\n"
        + "".join(f"{L}. {c}\n" for L, c in zip(LETTERS, row["choices"], strict=False))
        + "Answer:"
    )


def build_mmlu(path: Path, data: Path, tokenizer: Any, desc_subject: str | None, seed_subject: str | None) -> None:
    subjects = sorted(p.name for p in (data / "mmlu").iterdir() if p.is_dir())
    summaries: list[TaskSummary] = []
    records: list[DocRecord | InstanceRecord] = []
    for subject in subjects:
        name = f"mmlu_{subject}"
        rows = _load(data / "mmlu" / subject / "test.jsonl")
        pool = _load(data / "mmlu" / subject / "dev.jsonl")
        desc = f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}.\n\n"
        if subject == desc_subject:
            desc = desc.replace("questions", "questions, each")
        seed = 42 if subject == seed_subject else 1234
        rnd = random.Random(seed)
        contexts, shots_all = [], []
        for row in rows:
            shots = rnd.sample(range(len(pool)), 5)
            shots_all.append(shots)
            contexts.append(
                desc + "".join(_fmt(pool[i]) + " " + LETTERS[pool[i]["answer"]] + "\n\n" for i in shots) + _fmt(row)
            )
        ctx_ids = [e.ids for e in tokenizer.encode_batch(contexts, add_special_tokens=False)]
        cont_ids = {L: tokenizer.encode(" " + L, add_special_tokens=False).ids for L in LETTERS}
        for doc_id, (row, ctx, ids, shots) in enumerate(zip(rows, contexts, ctx_ids, shots_all, strict=True)):
            records.append(DocRecord(name, doc_id, row, row["answer"], LETTERS, shots, content_hash(row)))
            for idx, L in enumerate(LETTERS):
                cont = " " + L
                rh = request_hash_of("loglikelihood", ctx, cont, None, ids, cont_ids[L])
                records.append(
                    InstanceRecord(
                        instance_id_for(name, doc_id, idx),
                        name,
                        doc_id,
                        idx,
                        "loglikelihood",
                        ctx,
                        cont,
                        None,
                        1,
                        ids,
                        cont_ids[L],
                        rh,
                    )
                )
        config = {
            "task": name,
            "dataset_path": "cais/mmlu",
            "dataset_name": subject,
            "test_split": "test",
            "fewshot_split": "dev",
            "fewshot_config": {"sampler": "default"},
            "fewshot_random_seed": seed,
            "description": desc,
            "doc_to_text": "{{question.strip()}}\nA. …\nAnswer:",
            "doc_to_choice": LETTERS,
            "doc_to_target": "answer",
            "target_delimiter": " ",
            "fewshot_delimiter": "\n\n",
            "output_type": "multiple_choice",
            "num_fewshot": 5,
        }
        summaries.append(
            TaskSummary(
                name,
                "multiple_choice",
                len(rows),
                4 * len(rows),
                5,
                "",
                content_hash(rows),
                1.0,
                [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
                [],
                ["mmlu"],
                config,
            )
        )
    header = PlanHeader(
        config={"task": ["mmlu"], "run": {"num_fewshot": 5}, "model": {"name": "tiny"}},
        model=ModelInfo("tiny", tokenizer="tiny", tokenizer_hash="bench"),
        tasks=summaries,
        groups=[GroupSummary("mmlu", [s.name for s in summaries], [{"metric": "acc", "weight_by_size": True}])],
    )
    write_plan(path, header, records)


def _time(fn: Any, repeat: int = 3) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _cli(a: Path, b: Path) -> tuple[float, int]:
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "lmeval", "diff", str(a), str(b)], capture_output=True, text=True, cwd=ROOT
    )
    return time.perf_counter() - t, p.returncode


def measure(label: str, a: Path, b: Path, expect: dict[str, str]) -> dict[str, Any]:
    t_diff, report = _time(lambda: diff_plans(a, b))
    t_nover, _ = _time(lambda: diff_plans(a, b, verify=False))
    t_same, same = _time(lambda: diff_plans(a, a))
    t_cli, rc = _cli(a, b)
    t_cli_same, rc_same = _cli(a, a)
    got = {t.name: sorted(c.cause for c in t.causes if c.docs or c.instances or c.config) for t in report.tasks}
    ok = got == {k: [v] for k, v in expect.items()} and same.identical and rc == 1 and rc_same == 0
    return {
        "pair": label,
        "size_mb": (a.stat().st_size + b.stat().st_size) / 2 / 1e6,
        "docs": report.n_docs[1],
        "instances": report.n_instances[1],
        "diff_s": t_diff,
        "identical_s": t_same,
        "no_verify_s": t_nover,
        "cli_s": t_cli,
        "cli_identical_s": t_cli_same,
        "reported": got,
        "ok": ok,
    }


def machine() -> str:
    cpu = cpu_model()
    load = ", load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    return f"{platform.machine()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}{load}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=os.environ.get("LMEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--skip-compiled", action="store_true")
    args = ap.parse_args()
    data = Path(args.data_dir)
    from tokenizers import Tokenizer

    from lmeval.common.tinymodel import ensure_tiny_model

    tok = Tokenizer.from_file(str(ensure_tiny_model() / "tokenizer.json"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        a, b = Path(tmp) / "old.msgpack", Path(tmp) / "new.msgpack"
        t0 = time.perf_counter()
        build_mmlu(a, data, tok, None, None)
        build_mmlu(b, data, tok, DESC_SUBJECT, SEED_SUBJECT)
        print(f"built constructed plans in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        rows.append(
            measure(
                "constructed (writer)", a, b, {f"mmlu_{DESC_SUBJECT}": "description", f"mmlu_{SEED_SUBJECT}": "fewshot"}
            )
        )
        a.unlink()
        b.unlink()
        if not args.skip_compiled:
            rows += compiled_rows(Path(tmp), data)
    lines = [
        "# lmeval diff: full MMLU 5-shot plans",
        "",
        f"Machine: {machine()}",
        "",
        "Target: < 5 s per diff, exactly the two changed subjects reported with the right cause.",
        "",
        "| pair | plan MB | docs | instances | diff_plans s | identical s | --no-verify s | CLI s | CLI identical s "
        "| vs 5 s target | "
        "reported | ok |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['pair']} | - | - | - | - | - | - | - | - | - | {r['error']} | - |")
            continue
        lines.append(
            f"| {r['pair']} | {r['size_mb']:.0f} | {r['docs']} | {r['instances']} | {r['diff_s']:.2f} | "
            f"{r['identical_s']:.2f} | {r['no_verify_s']:.2f} | {r['cli_s']:.2f} | {r['cli_identical_s']:.2f} | "
            f"{5.0 / r['cli_s']:.1f}× faster | {r['reported']} | {'yes' if r['ok'] else 'NO'} |"
        )
    lines += [
        "",
        "diff_plans times are the best of 3 in one process (both plan hashes verified each time); CLI "
        "times are one `python -m lmeval diff` process each, start-up included.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    out = ROOT / "bench" / "results" / "diff.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(out)
    return 0 if all(r.get("ok") for r in rows) else 1


def compiled_rows(tmp: Path, data: Path) -> list[dict[str, Any]]:
    try:
        from lmeval.compiler import compile_plan
    except ImportError as e:
        return [{"pair": "compiled", "error": f"compiler not available ({e})"}]
    base = [*COMPILED_OVERRIDES, f"run.data_dir={data}"]
    try:
        changed = [*base, f"task.mmlu.definition={changed_mmlu_definition(tmp / 'mmlu_changed.yaml')}"]
    except (OSError, RuntimeError) as e:
        return [{"pair": "compiled", "error": str(e)[:160]}]
    a, b = tmp / "c_old.msgpack", tmp / "c_new.msgpack"
    try:
        t0 = time.perf_counter()
        h, recs = compile_plan(base)
        write_plan(a, h, recs)
        h, recs = compile_plan(changed)
        write_plan(b, h, recs)
        print(f"compiled both plans in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    except Exception as e:  # the benchmark reports what failed instead of stopping
        return [{"pair": "compiled", "error": f"{type(e).__name__}: {str(e)[:120]}"}]
    return [
        measure("compiled (compiler)", a, b, {f"mmlu_{DESC_SUBJECT}": "description", f"mmlu_{SEED_SUBJECT}": "fewshot"})
    ]


if __name__ == "__main__":
    raise SystemExit(main())
