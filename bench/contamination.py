"""Benchmark ``lmeval contamination`` (issue #29): corpus throughput (MB/s, and MB/s per CPU second) and peak
memory against a plan, side by side with the plainest correct Python (a set of word-tuple n-grams) and with
lm-eval 0.4.13's own ``decontamination.janitor`` n-grams (its normalisation, ``word_ngrams``, a set of strings).

The corpus is generated: a block of filler lines (words drawn from BoolQ passages, ../shared/data) with the
plan's first ``--planted`` MMLU questions planted in it, repeated to ``--mb`` MB. Each implementation runs in
a child process (peak RSS is its own); the baselines read the first ``--baseline-mb`` MB (they are slower) and
all three must report the same contaminated documents on it. Writes ``bench/results/contamination.md``.

    .venv/bin/python bench/contamination.py PLAN [--mb 1024] [--baseline-mb 64] [--planted 50]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine_info import cpu_model  # noqa: E402  (bench/ is sys.path[0])

DATA = ROOT.parent / "shared" / "data"


def make_corpus(plan: str, path: Path, mb: int, planted: int) -> list[int]:
    """Write the corpus; return the planted (doc index order) question positions of the plan's docs."""
    import numpy as np

    from lmeval.plans.plan import DocRecord, PlanReader

    vocab: list[str] = []
    with open(DATA / "boolq" / "validation.jsonl", encoding="utf-8") as f:
        for line in f:
            vocab += json.loads(line)["passage"].split()
    questions = []
    with PlanReader(plan) as r:
        for rec in r:
            if isinstance(rec, DocRecord) and len(questions) < planted:
                questions.append(rec.doc["question"])
    rng = np.random.default_rng(0)
    lines = []
    words = rng.choice(np.array(vocab, dtype=object), size=(1 << 20) * 2)
    pos = 0
    while pos < words.shape[0]:
        k = int(rng.integers(20, 400))
        lines.append(" ".join(words[pos : pos + k]))
        pos += k
    step = max(1, len(lines) // (len(questions) + 1))
    for i, q in enumerate(questions):
        lines[(i + 1) * step] += " " + q
    block = ("\n".join(lines) + "\n").encode()
    with open(path, "wb") as f:
        written = 0
        while written < mb << 20:
            f.write(block)
            written += len(block)
    return list(range(len(questions)))


def child(impl: str, plan: str, corpus: str, limit: int) -> None:
    times: list[float] = []
    if impl == "lmeval":
        from lmeval.contamination.plantext import build_plan_index
        from lmeval.contamination.report import build_contamination_report
        from lmeval.contamination.scan import match_corpus

        t0 = time.perf_counter()
        index = build_plan_index(plan, 13, ("prompt",))
        index_s = time.perf_counter() - t0
        t1, c1 = time.perf_counter(), time.process_time()
        matches, stats = match_corpus(index, 13, [corpus], "text")
        times = [time.perf_counter() - t1, time.process_time() - c1]
        rep = build_contamination_report(index, matches, stats, 13, ("prompt",), 0.0)
        found = {t.task: t.contaminated for t in rep.tasks if t.contaminated}
        nbytes = rep.summary["corpus"]["bytes"]
    else:
        found, index_s, nbytes = _plain(impl, plan, corpus, limit, times)
    wall, cpu = times
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": cpu,
                "rss_mb": rss,
                "bytes": nbytes,
                "index_s": index_s,
                "found": {k: sorted(v) for k, v in found.items()},
            }
        )
    )


def _plain(
    impl: str, plan: str, corpus: str, limit: int, times: list[float]
) -> tuple[dict[str, list[int]], float, int]:
    """The plainest correct implementations: a set of n-grams, one corpus line at a time."""
    from lmeval.contamination.ngrams import words
    from lmeval.contamination.plantext import question_of
    from lmeval.plans.plan import InstanceRecord, PlanReader

    n = 13
    t0 = time.perf_counter()
    owners: dict[object, list[tuple[str, int]]] = {}
    janitor = None
    if impl == "janitor":
        from lm_eval.decontamination.janitor import Janitor, word_ngrams

        janitor = Janitor(ngram_n=n)
    with PlanReader(plan) as r:
        cfg = {t.name: t for t in r.header.tasks}
        seen: set[tuple[str, int]] = set()
        for rec in r:
            if not isinstance(rec, InstanceRecord) or (rec.task, rec.doc_id) in seen:
                continue
            seen.add((rec.task, rec.doc_id))
            q = question_of(rec.context, cfg[rec.task].config, cfg[rec.task].num_fewshot)
            if janitor is not None:
                grams: list[object] = list(word_ngrams(janitor.normalize_string(q), n))
            else:
                ws = words(q)
                grams = [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]
            for g in grams:
                owners.setdefault(g, []).append((rec.task, rec.doc_id))
    index_s = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    found: dict[str, set[int]] = {}
    nbytes = 0
    with open(corpus, "rb") as f:
        for raw in f:
            nbytes += len(raw)
            if nbytes > limit:
                break
            line = raw.decode("utf-8")
            if janitor is not None:
                it: list[object] = list(word_ngrams(janitor.normalize_string(line), n))
            else:
                ws = words(line)
                it = [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]
            for g in it:
                hit = owners.get(g)
                if hit:
                    for task, d in hit:
                        found.setdefault(task, set()).add(d)
    times += [time.perf_counter() - t1, time.process_time() - c1]
    return {k: sorted(v) for k, v in found.items()}, index_s, min(nbytes, limit)


def _run(impl: str, plan: str, corpus: str, limit: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, __file__, "--child", impl, plan, corpus, str(limit)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, object] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--baseline-mb", type=int, default=64)
    ap.add_argument("--planted", type=int, default=50)
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        small = Path(tmp) / "small.txt"
        make_corpus(args.plan, corpus, args.mb, args.planted)
        with open(corpus, "rb") as src, open(small, "wb") as dst:
            dst.write(src.read(args.baseline_mb << 20).rsplit(b"\n", 1)[0] + b"\n")
        limit = small.stat().st_size
        rows = [
            ("lmeval (full corpus)", _run("lmeval", args.plan, str(corpus), 1 << 62)),
            ("lmeval (baseline slice)", _run("lmeval", args.plan, str(small), 1 << 62)),
            ("plain Python: set of word tuples", _run("plain", args.plan, str(small), limit)),
            ("lm-eval 0.4.13 janitor n-grams", _run("janitor", args.plan, str(small), limit)),
        ]
    load_after = os.getloadavg()
    same = rows[1][1]["found"] == rows[2][1]["found"] == rows[3][1]["found"]
    lines = [
        "# lmeval contamination: corpus throughput",
        "",
        f"Command: `.venv/bin/python bench/contamination.py PLAN --mb {args.mb} --baseline-mb {args.baseline_mb} "
        f"--planted {args.planted}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); plan: "
        f"`{Path(args.plan).name}`, eval side = the prompt field of every document.",
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs, {platform.python_version()}; load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after (a shared machine under load: figures are "
        "lower bounds).",
        "",
        "| implementation | corpus MB | plan index s | corpus wall s | corpus CPU s | MB/s (wall) | MB/s per CPU s "
        "| peak RSS MB | documents found |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows:
        mb = float(r["bytes"]) / (1 << 20)  # type: ignore[arg-type]
        wall, cpu, ix = float(r["wall"]), float(r["cpu"]), float(r["index_s"])  # type: ignore[arg-type]
        found = sum(len(v) for v in r["found"].values())  # type: ignore[attr-defined]
        lines.append(
            f"| {name} | {mb:.0f} | {ix:.1f} | {wall:.1f} | {cpu:.1f} | {mb / wall:.1f} | {mb / cpu:.1f} | "
            f"{float(r['rss_mb']):.0f} | {found} |"
        )  # type: ignore[arg-type]
    lines += ["", f"Same contaminated documents on the baseline slice, all three: {'yes' if same else 'NO'}.", ""]
    out = ROOT / "bench" / "results" / "contamination.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
