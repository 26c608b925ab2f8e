"""``lmeval contamination`` on real data (#29): ARC-Challenge and GSM8K test questions from ../shared/data
planted into filler text, JSONL and Parquet corpora are found with their locations; paraphrased questions
(a word changed every 10 words) and train-split questions (GSM8K's few-shot examples) do not count; hostile
corpora are skipped with counts; ``lmeval score --exclude`` equals the score of a plan without those docs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.contamination import words
from lmeval.contamination.corpus import MAX_UNIT
from lmeval.plans.plan import read_plan
from lmeval.scorer.score import score_run
from tests.scorer.golden_io import build, load_golden
from tests.support import jsonl_rows

TASKS = ["arc_challenge", "gsm8k"]


def _filler(k: int) -> str:
    rows = jsonl_rows("boolq", "validation", limit=k)
    return "\n".join(r["passage"] for r in rows)


def _half(text: str) -> str:
    ws = text.split()
    return " ".join(ws[: len(ws) // 2])


def _paraphrase(text: str) -> str:
    ws = text.split()
    return " ".join("thing" if i % 10 == 5 else w for i, w in enumerate(ws))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("contam")
    golden = load_golden("fake")
    plan, rdir = build(golden, base / "full", tasks=TASKS)
    p = read_plan(plan)
    arc = {r["id"]: r for r in jsonl_rows("arc_challenge", "test")}
    arc_q = {d.doc_id: arc[d.doc["id"]]["question"] for d in p.docs if d.task == "arc_challenge"}
    gsm_test = jsonl_rows("gsm8k", "test", limit=40)
    contexts = [i.context for i in p.instances if i.task == "gsm8k"]
    # train questions that are GSM8K few-shot examples of this plan (in a context, before the question)
    shots = [
        r["question"] for r in jsonl_rows("gsm8k", "train", limit=2000) if any(r["question"] in c for c in contexts)
    ]
    assert len(shots) >= 2
    corpus = base / "corpus"
    corpus.mkdir()
    filler = _filler(30)
    text = f"{filler}\nplanted: {arc_q[3]} end\n{_paraphrase(arc_q[12])}\n{shots[0]}\n{filler}\n"
    text += f"{_half(arc_q[16])}\n{arc_q[7]}\n"
    (corpus / "web.txt").write_text(text, encoding="utf-8")
    offset_3 = len(f"{filler}\n".encode())
    offset_7 = len(text.encode()) - len(f"{arc_q[7]}\n".encode())
    with open(corpus / "crawl.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps({"content": "nothing to see here"}) + "\n")
        f.write(json.dumps({"content": f"Q: {gsm_test[5]['question']} A: {gsm_test[5]['answer']}"}) + "\n")
        f.write(json.dumps({"other": arc_q[30]}) + "\n")  # no text field: skipped
        f.write("{not json\n")
        f.write(json.dumps({"content": shots[1]}) + "\n")
    pl.DataFrame({"content": ["a", "b", arc_q[21], _paraphrase(arc_q[23])]}).write_parquet(corpus / "books.parquet")
    # hostile: a binary file, invalid UTF-8, a line longer than MAX_UNIT with a planted question at its end
    (corpus / "blob.bin").write_bytes(b"\x00\x01\x02" * 1000 + arc_q[30].encode())
    (corpus / "bad.txt").write_bytes(b"ok line\n\xff\xfe" + arc_q[31].encode() + b"\nfine\n")
    long_line = ("filler word " * (MAX_UNIT // 12 + 1000)) + arc_q[35]
    (corpus / "long.txt").write_text(long_line + "\n", encoding="utf-8")
    (corpus / "long.jsonl").write_text(json.dumps({"content": long_line}) + "\n", encoding="utf-8")
    return {"base": base, "plan": plan, "results": rdir, "corpus": corpus, "golden": golden, "arc_q": arc_q,
            "offsets": (offset_3, offset_7)}  # fmt: skip


def test_normalisation_is_lm_evals() -> None:
    from lm_eval.decontamination.janitor import Janitor

    assert words("Don't  STOP—me, now!\n(ok) ÉTÉ") == ["dont", "stop—me", "now", "ok", "ÉtÉ"]
    janitor = Janitor()
    texts = [r["question"] + " " + " ".join(r["choices"]) for r in jsonl_rows("mmlu", "test", limit=2000)]
    assert all(words(t) == janitor.normalize_string(t).split() for t in texts)


def test_planted_documents_are_found_with_locations(setup: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    out = setup["base"] / "report"
    rc = main(["contamination", str(setup["plan"]), "--corpus", str(setup["corpus"]), "--text-field", "content",
               "-o", str(out)])  # fmt: skip
    assert rc == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"]["arc_challenge"] == {
        "checked": 40,
        "contaminated": 5,
        "contaminated_ids": [3, 7, 16, 21, 35],
    }
    assert summary["tasks"]["gsm8k"] == {"checked": 40, "contaminated": 1, "contaminated_ids": [5]}
    c = summary["corpus"]
    assert c["skipped_files"] == {str(setup["corpus"] / "blob.bin"): "binary (a NUL byte in its first 8 KiB)"}
    assert c["skipped_units"] == {
        "invalid UTF-8": 1,
        f"JSONL line over {MAX_UNIT} bytes": 1,
        "no string field 'content'": 1,
        "not JSON or not UTF-8": 1,
    }
    assert "arc_challenge" in printed and "skipped 1 files" in printed
    locs = pl.read_parquet(out / "locations.parquet")
    web = str(setup["corpus"] / "web.txt")
    got = {(r["task"], r["doc_id"]): (Path(r["file"]).name, r["offset"], r["row"]) for r in locs.iter_rows(named=True)}
    assert got[("arc_challenge", 3)] == ("web.txt", setup["offsets"][0], 30)
    assert got[("arc_challenge", 7)][:2] == ("web.txt", setup["offsets"][1])
    assert got[("arc_challenge", 21)] == ("books.parquet", -1, 2)
    assert got[("gsm8k", 5)] == ("crawl.jsonl", len(json.dumps({"content": "nothing to see here"})) + 1, 1)
    assert got[("arc_challenge", 35)][0] == "long.txt"
    assert len(got) == 6 and web
    docs = pl.read_parquet(out / "documents.parquet")
    assert docs.height == 80 and docs["contaminated"].sum() == 6
    # the planted question covers all of the prompt's n-grams; the paraphrase none
    arc12 = docs.filter((pl.col("task") == "arc_challenge") & (pl.col("doc_id") == 12)).row(0, named=True)
    assert arc12["n_matched"] == 0 and arc12["n_ngrams"] > 0


def test_min_fraction_and_ngram(setup: dict[str, Any]) -> None:
    out = setup["base"] / "report-frac"
    # the prompt is "Question: Q\nAnswer:": a planted Q matches all but 2 of its n-grams (36/38 for doc 3,
    # 12/14 for doc 7); the first 21 of the 42 words of doc 16's question match 9 of its 32
    assert main(["contamination", str(setup["plan"]), "--corpus", str(setup["corpus"] / "web.txt"),
                 "--fields", "prompt", "--min-fraction", "0.8", "-o", str(out)]) == 0  # fmt: skip
    s = json.loads((out / "summary.json").read_text())
    assert s["tasks"]["arc_challenge"]["contaminated_ids"] == [3, 7]
    docs = pl.read_parquet(out / "documents.parquet").filter(pl.col("task") == "arc_challenge")
    got = {r["doc_id"]: (r["n_matched"], r["n_ngrams"]) for r in docs.iter_rows(named=True) if r["n_matched"]}
    assert got == {3: (36, 38), 7: (12, 14), 16: (9, 32)}
    out8 = setup["base"] / "report-8"
    assert main(["contamination", str(setup["plan"]), "--corpus", str(setup["corpus"] / "web.txt"),
                 "--ngram", "8", "-o", str(out8)]) == 0  # fmt: skip
    s8 = json.loads((out8 / "summary.json").read_text())
    assert s8["ngram"] == 8 and {3, 7} <= set(s8["tasks"]["arc_challenge"]["contaminated_ids"])


def test_clean_subset_score_equals_a_plan_without_those_docs(setup: dict[str, Any]) -> None:
    report = setup["base"] / "report"
    if not (report / "summary.json").exists():
        assert main(["contamination", str(setup["plan"]), "--corpus", str(setup["corpus"]), "--text-field",
                     "content", "-o", str(report)]) == 0  # fmt: skip
    drop = {"arc_challenge": {3, 7, 16, 21, 35}, "gsm8k": {5}}
    clean = score_run(str(setup["results"]), bootstrap_iters=100, exclude=report).run
    golden = copy.deepcopy(setup["golden"])
    for name, ids in drop.items():
        t = golden["tasks"][name]
        t["docs"] = [d for d in t["docs"] if d["doc_id"] not in ids]
        t["instances"] = [i for i in t["instances"] if i["doc_id"] not in ids]
    _, rdir = build(golden, setup["base"] / "without", tasks=TASKS)
    ref = score_run(str(rdir), bootstrap_iters=100).run
    for name in TASKS:
        assert clean.results[name] == ref.results[name], name
        assert clean.n_samples[name]["effective"] == 40 - len(drop[name])
    assert clean.run["excluded"] == {"arc_challenge": [3, 7, 16, 21, 35], "gsm8k": [5]}
    full = score_run(str(setup["results"]), bootstrap_iters=100).run
    assert full.n_samples["arc_challenge"]["effective"] == 40 and "excluded" not in full.run


def test_exclude_runs_filters_and_metrics_once_per_task(setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The clean and the all-documents scores share one scoring pass (code-executing metrics run once)."""
    import importlib

    score_mod = importlib.import_module("lmeval.scorer.score")  # the module (lmeval.scorer.score is the function)
    calls: list[str] = []
    real = score_mod.score_task

    def counted(ts: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(ts.name)
        return real(ts, *args, **kwargs)

    monkeypatch.setattr(score_mod, "score_task", counted)
    report = setup["base"] / "report"
    if not (report / "summary.json").exists():
        assert main(["contamination", str(setup["plan"]), "--corpus", str(setup["corpus"]), "--text-field",
                     "content", "-o", str(report)]) == 0  # fmt: skip
    run = score_run(str(setup["results"]), bootstrap_iters=100, exclude=report).run
    assert sorted(calls) == sorted(TASKS)
    assert run.contamination is not None and set(run.contamination.all) >= set(TASKS)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--corpus", "/nonexistent/corpus"], "/nonexistent/corpus: no such corpus file or folder"),
        (["--corpus", "CORPUS", "--fields", "prompt,answer"], "--fields: unknown field 'answer'"),
        (["--corpus", "CORPUS", "--ngram", "0"], "--ngram: must be at least 1"),
    ],
)
def test_bad_input_is_one_line(setup: dict[str, Any], capsys: pytest.CaptureFixture[str], argv: list[str],
                               message: str) -> None:  # fmt: skip
    argv = [str(setup["corpus"]) if a == "CORPUS" else a for a in argv]
    assert main(["contamination", str(setup["plan"]), *argv, "-o", str(setup["base"] / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_exclude_refuses_a_report_of_another_plan(setup: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    other = setup["base"] / "other-report"
    other.mkdir(exist_ok=True)
    (other / "summary.json").write_text(json.dumps({"format": "lmeval-contamination", "plan_hash": "ab" * 32,
                                                    "tasks": {}}))  # fmt: skip
    assert main(["score", str(setup["results"]), "--exclude", str(other), "--quiet", "--bootstrap-iters", "10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "report of plan abababababab" in err


def test_workers_on_ray_give_the_same_report(setup: dict[str, Any]) -> None:
    one, two = setup["base"] / "report-one", setup["base"] / "report-two"
    common = ["contamination", str(setup["plan"]), "--corpus", str(setup["corpus"]), "--text-field", "content"]
    assert main([*common, "-o", str(one)]) == 0
    assert main([*common, "--workers", "2", "-o", str(two)]) == 0
    assert json.loads((one / "summary.json").read_text()) == json.loads((two / "summary.json").read_text())
    for name in ("documents.parquet", "locations.parquet"):
        assert pl.read_parquet(one / name).equals(pl.read_parquet(two / name)), name


def test_hostile_parquet_files_are_skipped_with_their_reason(
    setup: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "garbage.parquet").write_bytes(b"PAR1 not really" * 100)
    pl.DataFrame({"body": [setup["arc_q"][3]]}).write_parquet(tmp_path / "other_column.parquet")
    pl.DataFrame({"content": [None, "x", setup["arc_q"][7]]}).write_parquet(tmp_path / "nulls.parquet")
    out = tmp_path / "report"
    argv = ["contamination", str(setup["plan"]), "--corpus", str(tmp_path), "--text-field", "content", "-o", str(out)]
    assert main(argv) == 0
    c = json.loads((out / "summary.json").read_text())
    assert c["tasks"]["arc_challenge"]["contaminated_ids"] == [7]
    assert c["corpus"]["skipped_files"] == {
        str(tmp_path / "garbage.parquet"): "not a readable Parquet file (ArrowInvalid)",
        str(tmp_path / "other_column.parquet"): "no column 'content'",
    }
    assert c["corpus"]["skipped_units"] == {"no string field 'content'": 1}
    assert "Traceback" not in capsys.readouterr().err


def test_corpus_files_are_read_bounded(
    setup: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#53 item 9: a FIFO named as the corpus is refused in one line (never waited on); a Parquet value over
    MAX_UNIT is skipped before it becomes a Python string, a row group whose text column is over
    MAX_PARQUET_CHUNK is skipped unread; the other rows are still searched."""
    import os

    from lmeval.contamination import corpus

    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    argv = ["contamination", str(setup["plan"]), "--corpus", str(fifo), "-o", str(tmp_path / "r0")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "must be a regular file, found a FIFO" in err and err.count("\n") == 1, err

    folder = tmp_path / "corpus"
    folder.mkdir()
    long = "word " * ((corpus.MAX_UNIT // 5) + 10)
    pl.DataFrame({"content": [long, setup["arc_q"][7]]}).write_parquet(folder / "long.parquet")
    stats = corpus.CorpusStats()
    got = list(corpus.units(folder / "long.parquet", "content", stats))
    assert [u.row for u in got] == [1] and stats.skipped_units == {
        f"a Parquet value longer than {corpus.MAX_UNIT} bytes": 1
    }

    big = folder / "big_group.parquet"
    values = [c * (1 << 20) for c in "xyz"] + [setup["arc_q"][7]]  # distinct: no dictionary encoding
    pl.DataFrame({"content": values}).write_parquet(big, row_group_size=2)
    small = {"MAX_PARQUET_CHUNK": 3 << 19}  # 1.5 MiB: the first row group (2 MiB) is over it, the second is not
    stats = corpus.CorpusStats()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in small.items():
            mp.setattr(corpus, k, v)
        got = list(corpus.units(big, "content", stats))
    assert [u.row for u in got] == [2, 3] and list(stats.skipped_units.values()) == [1]
