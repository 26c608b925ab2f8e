"""Guard-removed demonstrations (#19 acceptance 1): each one-line mutation breaks one guarantee; the test
named for that guarantee must go red.

    PYTHONPATH=$PWD .venv/bin/python tests/mutants/run_mutants.py [--only NAME ...] [--no-baseline]

For each mutation: run its tests on the unchanged code (baseline, must pass), replace the exact line in
the source file (the line must occur exactly once, else the mutation is reported as NOT FOUND: the code
moved), run the tests again, and put the file back byte for byte, whatever happens (``finally``; SIGINT
and SIGTERM run it too). Before touching a file its original bytes go to a journal in the temp dir; a
run killed outright leaves the journal behind, and the next run restores from it first.

Prints ``mutation | file | tests | baseline | mutated`` where mutated is RED (pytest reported failures,
exit 1), GREEN (the tests still pass: the test does not guard the line) or ERROR (pytest could not run
them, exit >= 2). Exit status 0 only when every mutation is RED. Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[2]
JOURNAL = Path(tempfile.gettempdir()) / f"lmeval-mutants-{REPO.name}-journal.json"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repo root
    old: str  # exact text, must occur once
    new: str
    tests: tuple[str, ...]  # pytest node ids


MUTATIONS = [
    Mutation(
        "BOS: unset add_bos_token no longer follows the tokenizer (always off)",
        "plans/tokenization.py",
        "    return True if add_bos_token is None else add_bos_token\n",
        "    return bool(add_bos_token)\n",
        ("tests/plans/test_tokenization.py", "tests/compiler/test_bos_ids.py::test_ids_equal_hflm"),
    ),
    Mutation(
        "BOS: a prompt that starts with <s> gets a second BOS",
        "plans/tokenization.py",
        "    if prefix_text and text.startswith(prefix_text):\n        return False\n",
        "    if False:\n        return False\n",
        ("tests/compiler/test_bos_ids.py::test_chat_templated_prompts_get_one_bos",),
    ),
    Mutation(
        "regex: all-empty-groups fallback not stripped",
        "scorer/regex_ops.py",
        "            return fallback.strip()  # lm-eval strips the fallback in this one case\n",
        "            return fallback\n",
        ("tests/scorer/test_regex.py",),
    ),
    Mutation(
        "instance id: doc_id and idx swapped in the derivation",
        "plans/records.py",
        '    return hashlib.sha256(f"{task}\\x00{doc_id}\\x00{idx}".encode()).hexdigest()[:16]\n',
        '    return hashlib.sha256(f"{task}\\x00{idx}\\x00{doc_id}".encode()).hexdigest()[:16]\n',
        ("tests/plans/test_io.py::test_instance_ids_and_shards_are_stable",),
    ),
    Mutation(
        "request hash: generation_kwargs left out",
        "plans/records.py",
        '        "generation_kwargs": None if generation_kwargs is None else normalize(generation_kwargs),\n',
        '        "generation_kwargs": None,\n',
        ("tests/compiler/test_determinism.py::test_request_hashes_follow_the_format_spec",),
    ),
    Mutation(
        "compare: p-value without the sqrt(2)",
        "scorer/compare.py",
        "        md.p = math.erfc(abs(md.z) / math.sqrt(2))\n",
        "        md.p = math.erfc(abs(md.z))\n",
        ("tests/scorer/test_errors.py::test_samples_parquet_and_compare",),
    ),
    Mutation(
        "diff: exit 0 when the plans differ",
        "lmeval/cmd_diff.py",
        "    return 0 if report.identical else 1\n",
        "    return 0\n",
        ("tests/diff/test_diff_cli.py::test_differ_exit_1",),
    ),
    Mutation(
        "sandbox: no throwaway uid (programs run as root)",
        "scorer/sandbox/run.py",
        "        uid = _next_uid() if iso.drop_uid else None\n",
        "        uid = None\n",
        ("tests/scorer/test_sandbox_isolation.py::test_runs_as_a_throwaway_uid_not_root",),
    ),
    Mutation(
        "--reuse: another tokenizer accepted",
        "executor/modelconf.py",
        'REUSE_KEYS = ("name", "path", "backend", "dtype", "max_model_len", "add_bos_token", "tokenizer_hash", '
        '"config_hash")\n',
        'REUSE_KEYS = ("name", "path", "backend", "dtype", "max_model_len", "add_bos_token", "config_hash")\n',
        ("tests/executor/test_fake_run.py::test_reuse_refuses_another_backend_model_path_or_tokenizer",),
    ),
    Mutation(
        "one writer: the results-dir lock is shared, not exclusive",
        "executor/store.py",
        "            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
        "            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)\n",
        ("tests/executor/test_one_writer.py::test_two_executes_on_one_out_never_write_more_rows_than_instances",),
    ),
    Mutation(
        "scoring index: trusts the stamp's own plan hash (another plan's index accepted)",
        "scorer/planload.py",
        "        if stamp != _stamp(header.plan_hash, idx):\n",
        '        if stamp != _stamp(stamp.get("plan_hash", ""), idx):\n',
        ("tests/scorer/test_index.py",),
    ),
    Mutation(
        "custom filter: documents handed over in the wrong order",
        "scorer/filters.py",
        "    return Responses.from_py(list(f(st.to_py(), ctx.docs())))\n",
        "    return Responses.from_py(list(f(st.to_py(), ctx.docs()[::-1])))\n",
        ("tests/scorer/test_parity_hooks.py",),
    ),
    Mutation(
        "rouge: Porter stemmer on (lm-eval/evaluate use none)",
        "scorer/doc_metrics.py",
        "    scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=False)\n",
        "    scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=True)\n",
        ("tests/scorer/test_parity_hooks.py",),
    ),
    Mutation(
        "pass@k: estimator off by one",
        "scorer/passk.py",
        "    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))\n",
        "    return float(1.0 - np.prod(1.0 - k / np.arange(n - c, n + 1)))\n",
        (
            "tests/scorer/test_code_tasks.py::test_pass_at_k_is_code_evals_estimator",
            "tests/scorer/test_parity_hooks.py",
        ),
    ),
]


def _restore_journal() -> list[str]:
    """Put back any file a killed earlier run left mutated."""
    if not JOURNAL.exists():
        return []
    saved = json.loads(JOURNAL.read_text())
    for rel, b64 in saved.items():
        (REPO / rel).write_bytes(base64.b64decode(b64))
    JOURNAL.unlink()
    return sorted(saved)


def _pytest(tests: tuple[str, ...], timeout: float) -> tuple[int, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        rc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    return rc, time.monotonic() - t0


def _verdict(rc: int) -> str:
    return {0: "GREEN", 1: "RED"}.get(rc, f"ERROR(rc={rc})")


def run_one(m: Mutation, baseline: bool, timeout: float) -> tuple[str, str]:
    path = REPO / m.file
    original = path.read_bytes()
    text = original.decode()
    if text.count(m.old) != 1:
        return "-", f"NOT FOUND ({text.count(m.old)} matches)"
    base = "skipped"
    if baseline:
        rc, _ = _pytest(m.tests, timeout)
        base = _verdict(rc)
        if rc != 0:
            return base, "not run (baseline not green)"
    JOURNAL.write_text(json.dumps({m.file: base64.b64encode(original).decode()}))
    try:
        path.write_bytes(text.replace(m.old, m.new).encode())
        rc, secs = _pytest(m.tests, timeout)
    finally:
        path.write_bytes(original)
        JOURNAL.unlink(missing_ok=True)
    assert path.read_bytes() == original
    return base, f"{_verdict(rc)} ({secs:.0f} s)"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="substrings of mutation names to run")
    ap.add_argument("--no-baseline", action="store_true", help="do not run the tests on the unchanged code first")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    restored = _restore_journal()
    if restored:
        print(f"restored from an interrupted run: {', '.join(restored)}", file=sys.stderr)
    chosen = [m for m in MUTATIONS if not args.only or any(s in m.name for s in args.only)]
    rows = []
    for m in chosen:
        base, mutated = run_one(m, not args.no_baseline, args.timeout)
        rows.append((m.name, m.file, " ".join(t.split("::")[-1] for t in m.tests), base, mutated))
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print("| mutation | file | tests | baseline | mutated |\n|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0 if all(r[4].startswith("RED") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
