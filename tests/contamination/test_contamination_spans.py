"""``lmeval contamination --workers N`` on a corpus that is one large file (#29): the file is cut into byte
ranges at line starts (text, JSONL) or at row groups (Parquet); ARC-Challenge test questions from
../shared/data planted at the first line, just before a cut, straddling a cut, at the line a cut is aligned
to and at the last line (no newline) are each found exactly once, at their absolute offset and row; the
report of ``--workers 2`` on Ray and of many in-process spans equals the one-process report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.cli import main
from lmeval.contamination.check import in_corpus_order, match_files, match_spans
from lmeval.contamination.corpus import CorpusStats, Span, units
from lmeval.contamination.plantext import FIELDS, build_plan_index
from lmeval.contamination.ranges import MIN_SPAN, plan_spans
from lmeval.contamination.report import build_contamination_report
from lmeval.contamination.shards import merge_shards
from lmeval.plans.plan import read_plan
from tests.scorer.golden_io import build, load_golden
from tests.support import jsonl_rows

PLANTED = (21, 16, 3, 7, 30)  # first line, before the cut, straddling it, at the aligned cut, last line


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("spans")
    plan, _ = build(load_golden("fake"), base / "run", tasks=["arc_challenge"])
    arc = {r["id"]: r for r in jsonl_rows("arc_challenge", "test")}
    q = {d.doc_id: arc[d.doc["id"]]["question"] for d in read_plan(plan).docs if d.task == "arc_challenge"}
    filler = [r["passage"] for r in jsonl_rows("boolq", "validation", limit=400)]
    half: list[str] = []
    while sum(len(x) + 1 for x in half) < MIN_SPAN + (200 << 10):
        half += filler
    pad = " ".join(filler[:3])  # the straddling line is long enough to hold the middle of the file
    lines = [f"first: {q[21]}", *half, f"before the cut: {q[16]}", f"straddles: {pad} {q[3]} {pad}",
             f"aligned: {q[7]}", *half, f"last: {q[30]}"]  # fmt: skip
    return {"base": base, "plan": plan, "q": q, "lines": lines}


def _offsets(lines: list[str], sep: bytes = b"\n") -> list[int]:
    out, pos = [], 0
    for line in lines:
        out.append(pos)
        pos += len(line.encode()) + len(sep)
    return out


def _planted_rows(lines: list[str]) -> dict[int, int]:
    marks = ("first:", "before the cut:", "straddles:", "aligned:", "last:")
    return {d: next(i for i, x in enumerate(lines) if x.startswith(m)) for d, m in zip(PLANTED, marks, strict=True)}


def _write(setup: dict[str, Any], kind: str) -> tuple[Path, dict[int, tuple[int, int]]]:
    """The one-file corpus of ``kind`` and the planted documents' expected (offset, row)."""
    lines, rows = setup["lines"], _planted_rows(setup["lines"])
    path = setup["base"] / f"corpus-{kind}.{'parquet' if kind == 'parquet' else kind}"
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        # plain encoding, uncompressed: the file's size is its text's (about 2.7 MB, in row groups of 1000 rows)
        pq.write_table(pa.table({"text": lines}), path, compression="none", use_dictionary=False, row_group_size=1000)
        return path, {d: (-1, r) for d, r in rows.items()}
    body = [json.dumps({"text": x}) for x in lines] if kind == "jsonl" else lines
    path.write_bytes("\n".join(body).encode())  # the last line has no newline
    offs = _offsets(body)
    return path, {d: (offs[r], r) for d, r in rows.items()}


def _report_dir(out: Path) -> dict[str, Any]:
    return {
        "summary": json.loads((out / "summary.json").read_text()),
        "documents": pl.read_parquet(out / "documents.parquet"),
        "locations": pl.read_parquet(out / "locations.parquet"),
    }


def _assert_found_once(report: dict[str, Any], path: Path, expected: dict[int, tuple[int, int]]) -> None:
    assert report["summary"]["tasks"]["arc_challenge"]["contaminated_ids"] == sorted(PLANTED)
    got = {r["doc_id"]: (r["file"], r["offset"], r["row"]) for r in report["locations"].iter_rows(named=True)}
    assert report["locations"].height == len(PLANTED)  # each exactly once
    assert got == {d: (str(path), o, r) for d, (o, r) in expected.items()}


@pytest.mark.parametrize("kind", ["txt", "jsonl"])
def test_text_cut_is_a_line_start_and_the_straddling_line_is_read_once(setup: dict[str, Any], kind: str) -> None:
    path, expected = _write(setup, kind)
    size = path.stat().st_size
    spans = plan_spans([str(path)], 2)
    assert [s.end for s in spans] == [spans[1].start, -1]
    assert spans[1].start == expected[7][0]  # the raw cut (the middle) falls in the straddling line
    assert expected[3][0] < size // 2 < expected[7][0]
    stats = CorpusStats()
    n_units = sum(1 for s in spans for _ in units(path, "text", stats, s))
    at = expected[7][1]  # the aligned cut's line: the first of the second span
    assert n_units == len(setup["lines"]) and [s.lines for s in spans] == [at, len(setup["lines"]) - at]
    assert stats.files == 1 and stats.bytes == size


def test_parquet_is_cut_at_row_groups(setup: dict[str, Any]) -> None:
    path, _ = _write(setup, "parquet")
    spans = plan_spans([str(path)], 2)
    assert len(spans) == 2 and spans[0].start == 0 and spans[0].end == spans[1].start > 0 and spans[1].end == -1


@pytest.mark.parametrize("kind", ["txt", "jsonl", "parquet"])
def test_many_spans_give_the_one_process_report(setup: dict[str, Any], kind: str) -> None:
    path, expected = _write(setup, kind)
    index = build_plan_index(str(setup["plan"]), 13, FIELDS)
    files = [str(path)]
    one, one_stats = match_files(index, 13, files, "text")
    spans = plan_spans(files, 8, min_span=64 << 10)  # as 8 workers would: every 8th span, in corpus order
    assert len(spans) >= 4
    shards = [match_spans(index, 13, spans[i::3], "text") for i in range(3)]
    many, many_stats = merge_shards(shards, files)
    ref = build_contamination_report(index, in_corpus_order(one, files), one_stats, 13, FIELDS, 0.0)
    got = build_contamination_report(index, in_corpus_order(many, files), many_stats, 13, FIELDS, 0.0)
    assert got.summary == ref.summary
    assert got.documents.equals(ref.documents) and got.locations.equals(ref.locations)
    _assert_found_once(vars(got), path, expected)


@pytest.mark.parametrize("kind", ["txt", "jsonl", "parquet"])
def test_workers_2_on_ray_equal_one_process_on_one_file(setup: dict[str, Any], kind: str, ray_2: None) -> None:
    path, expected = _write(setup, kind)
    common = ["contamination", str(setup["plan"]), "--corpus", str(path)]
    one, two = setup["base"] / f"one-{kind}", setup["base"] / f"two-{kind}"
    assert main([*common, "-o", str(one)]) == 0
    assert main([*common, "--workers", "2", "-o", str(two)]) == 0
    a, b = _report_dir(one), _report_dir(two)
    assert a["summary"] == b["summary"] and a["summary"]["corpus"]["files"] == 1
    assert a["documents"].equals(b["documents"]) and a["locations"].equals(b["locations"])
    _assert_found_once(b, path, expected)


@pytest.fixture(scope="module")
def ray_2() -> Any:
    """One local Ray of 2 CPUs for the module (``--workers 2`` uses it; the shards run as 2 Ray tasks)."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_spans_of_many_small_files_are_whole_files(tmp_path: Path) -> None:
    files = []
    for i in range(5):
        (tmp_path / f"{i}.txt").write_text("x\n" * 100)
        files.append(str(tmp_path / f"{i}.txt"))
    assert plan_spans(files, 2) == [Span(f) for f in files]
