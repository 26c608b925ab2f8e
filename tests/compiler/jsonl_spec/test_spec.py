"""The frozen JSONL task spec: every validation rule, file-level robustness, and loading for the compiler."""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from lmeval.compiler.jsonl_spec import CATEGORIES, METRICS
from lmeval.compiler.jsonl_spec.load import SpecError, load_spec_task, render_prompt
from lmeval.compiler.jsonl_spec.rules import GENERATION_KWARGS, LEGAL, MAX_LINE_BYTES, RULES
from lmeval.compiler.jsonl_spec.validate import SpecReadError, check_record, validate_file
from lmeval.plans.errors import UserError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "spec"
GOOD = FIXTURES / "tasks.jsonl"
BAD = FIXTURES / "tasks_bad.jsonl"

# tasks_bad.jsonl, line by line: the one rule each line breaks, and the field it is reported on
BAD_EXPECTED = [
    (1, "invalid_json", "-"),
    (2, "not_object", "-"),
    (3, "blank_line", "-"),
    (4, "invalid_utf8", "-"),
    (5, "duplicate_key", "task_id"),
    (6, "missing_field", "post_process"),
    (7, "unknown_field", "answer"),
    (8, "wrong_type", "targets"),
    (9, "empty_task_id", "task_id"),
    (10, "task_id_whitespace", "task_id"),
    (11, "duplicate_task_id", "task_id"),
    (12, "unknown_category", "category"),
    (13, "empty_prompt", "prompt"),
    (14, "prompt_trailing_whitespace", "prompt"),
    (15, "fewshot_block_in_prompt", "prompt"),
    (16, "empty_targets", "targets"),
    (17, "unknown_metric", "metric_name"),
    (18, "unknown_post_process", "post_process"),
    (19, "metric_not_allowed", "metric_name"),  # code_exec category, exact_match metric
    (20, "metric_not_allowed", "metric_name"),  # summary category, code_exec metric
    (21, "metric_not_allowed", "metric_name"),  # mcq with accuracy
    (22, "post_process_not_allowed", "post_process"),  # mcq with lower
    (23, "mcq_target", "targets"),  # two letters
    (24, "mcq_target", "targets"),  # a word
    (25, "too_many_examples", "few_shot_examples"),
    (26, "wrong_type", "metadata"),
    (27, "wrong_type", "few_shot_examples[0]"),
    (28, "missing_field", "few_shot_examples[0].completion"),
    (29, "unknown_field", "few_shot_examples[0].answer"),
    (30, "fewshot_block_in_prompt", "few_shot_examples[1].completion"),
    (31, "invalid_json", "-"),  # NaN
    (32, "wrong_type", "targets[1]"),
    (33, "wrong_type", "task_id"),
    (34, "post_process_not_allowed", "post_process"),  # code_exec with lower
    # what no plan can carry (plans.limits): compile would refuse it, so validate does
    (35, "integer_out_of_range", "-"),  # 2**64 in metadata
    (36, "lone_surrogate", "-"),
    (37, "nesting_too_deep", "-"),  # 990 deep: parses, beyond MAX_DEPTH
    (38, "nesting_too_deep", "-"),  # 100,000 deep: beyond the JSON parser's recursion
]
# rules that need a whole file of their own (tested below)
FILE_RULES = {"empty_file", "line_too_long"}


def _valid() -> dict:
    return {
        "task_id": "t1",
        "category": "arithmetic",
        "prompt": "Question: What is 1 + 1?\nAnswer:",
        "targets": ["2"],
        "metric_name": "exact_match",
        "post_process": "strip_whitespace",
    }


def _write(path: Path, lines: Sequence[bytes | str | dict]) -> Path:
    with open(path, "wb") as f:
        for x in lines:
            raw = json.dumps(x).encode() if isinstance(x, dict) else x.encode() if isinstance(x, str) else x
            f.write(raw + b"\n")
    return path


@pytest.fixture(scope="module")
def bad_report():
    return validate_file(BAD)


# ------------------------------------------------------------------------------------------ fixtures


def test_valid_fixture_is_all_valid() -> None:
    report = validate_file(GOOD)
    assert report.ok and report.issues == [] and report.bad_lines == []
    assert report.n_lines == len(report.records) == 10
    assert Counter(rec["category"] for _, rec in report.records) == {c: 2 for c in CATEGORIES}


def test_bad_fixture_expectations_cover_the_file(bad_report) -> None:
    assert bad_report.n_lines == len(BAD_EXPECTED)
    assert bad_report.records == []
    # exactly one error per line
    assert [i.line for i in bad_report.issues] == [line for line, _, _ in BAD_EXPECTED]


def test_every_rule_is_exercised() -> None:
    covered = {rule for _, rule, _ in BAD_EXPECTED} | FILE_RULES
    assert covered == set(RULES)


@pytest.mark.parametrize(("line", "rule", "field"), BAD_EXPECTED, ids=[f"{n}-{r}" for n, r, _ in BAD_EXPECTED])
def test_bad_line_breaks_exactly_its_rule(bad_report, line: int, rule: str, field: str) -> None:
    found = [(i.rule, i.field) for i in bad_report.issues if i.line == line]
    assert found == [(rule, field)]


@pytest.mark.parametrize(("line", "rule", "field"), BAD_EXPECTED, ids=[f"{n}-{r}" for n, r, _ in BAD_EXPECTED])
def test_bad_line_alone_is_caught(tmp_path: Path, line: int, rule: str, field: str) -> None:
    # each bad line among valid ones fails only itself (line 11 needs the task_id of line 6 to duplicate)
    bad_lines = BAD.read_bytes().split(b"\n")
    good_lines = GOOD.read_bytes().split(b"\n")[:10]
    lines = good_lines[:3] + ([bad_lines[5]] if rule == "duplicate_task_id" else []) + [bad_lines[line - 1]]
    lines += good_lines[3:]
    report = validate_file(_write(tmp_path / "mix.jsonl", lines))
    assert [(i.rule, i.field) for i in report.issues if i.line == len(lines) - 7] == [(rule, field)]
    assert len(report.records) == 10


# ---------------------------------------------------------------------------------------- rule table


def test_code_exec_metric_iff_code_exec_category() -> None:
    for category in CATEGORIES:
        assert ("code_exec" in LEGAL[category]) == (category == "code_exec")
        assert set(LEGAL[category]) <= set(METRICS)
    assert set(LEGAL["mcq"]) == {"exact_match"}
    assert set(GENERATION_KWARGS) == set(CATEGORIES)


@pytest.mark.parametrize("category", CATEGORIES)
def test_legal_pairs_validate_and_others_do_not(category: str) -> None:
    for metric in METRICS:
        for post in ("none", "strip_whitespace", "lower", "extract_letter", "extract_code_block"):
            rec = dict(_valid(), category=category, metric_name=metric, post_process=post)
            if category == "mcq":
                rec["targets"] = ["A"]
            rules = {r for r, _, _ in check_record(rec)}
            legal = metric in LEGAL[category] and post in LEGAL[category][metric]
            assert (rules == set()) == legal, (category, metric, post, rules)


def test_mcq_letters_and_single_target() -> None:
    base = dict(_valid(), category="mcq", post_process="extract_letter")
    for target, ok in [("A", True), ("E", True), ("F", False), ("a", False), (" A", False), ("AB", False)]:
        rules = [r for r, _, _ in check_record(dict(base, targets=[target]))]
        assert rules == ([] if ok else ["mcq_target"]), target
    assert [r for r, _, _ in check_record(dict(base, targets=["A", "A"]))] == ["mcq_target"]


def test_one_mistake_is_reported_once() -> None:
    # dependent rules (pairs, mcq target) are not re-reported for a field that is already wrong
    assert [r for r, _, _ in check_record(dict(_valid(), category="maths", metric_name="code_exec"))] == [
        "unknown_category"
    ]
    assert [r for r, _, _ in check_record(dict(_valid(), metric_name="bleu"))] == ["unknown_metric"]
    rec = dict(_valid(), category="mcq", targets=["A", 3], post_process="extract_letter")
    assert [r for r, _, _ in check_record(rec)] == ["wrong_type"]
    assert [r for r, _, _ in check_record(dict(_valid(), prompt="Q:\n\n"))] == ["prompt_trailing_whitespace"]


def test_several_independent_mistakes_are_all_reported() -> None:
    rec = dict(_valid(), task_id="a b", extra=1, targets=[])
    del rec["post_process"]
    assert sorted(r for r, _, _ in check_record(rec)) == [
        "empty_targets",
        "missing_field",
        "task_id_whitespace",
        "unknown_field",
    ]


def test_blank_line_with_spaces_counts_as_example_separator() -> None:
    rules = [r for r, _, _ in check_record(dict(_valid(), prompt="Q: 1?\n \t\nA:"))]
    assert rules == ["fewshot_block_in_prompt"]
    assert check_record(dict(_valid(), prompt="line one\nline two")) == []


def test_task_id_unicode_whitespace() -> None:
    assert [r for r, _, _ in check_record(dict(_valid(), task_id="a\u00a0b"))] == ["task_id_whitespace"]
    assert [r for r, _, _ in check_record(dict(_valid(), task_id="t\n"))] == ["task_id_whitespace"]


# ------------------------------------------------------------------------------------- file robustness


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_bytes(b"")
    report = validate_file(tmp_path / "e.jsonl")
    assert [(i.line, i.rule) for i in report.issues] == [(1, "empty_file")]


def test_ten_megabyte_line_is_reported_with_bounded_memory(tmp_path: Path) -> None:
    huge = dict(_valid(), task_id="huge", prompt="x" * (10 * 1024 * 1024))
    path = _write(tmp_path / "big.jsonl", [_valid(), huge, dict(_valid(), task_id="t3")])
    tracemalloc.start()
    try:
        report = validate_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(i.line, i.rule) for i in report.issues] == [(2, "line_too_long")]
    assert [line for line, _ in report.records] == [1, 3]
    assert peak < 4 * MAX_LINE_BYTES  # the 10 MB line was never held in memory


def test_line_at_the_size_limit_is_read(tmp_path: Path) -> None:
    rec = _valid()
    rec["metadata"] = {"pad": ""}
    pad = MAX_LINE_BYTES - len(json.dumps(rec)) - 1  # the line and its newline fill the limit exactly
    rec["metadata"]["pad"] = "p" * pad
    path = _write(tmp_path / "edge.jsonl", [rec])
    assert len(path.read_bytes()) == MAX_LINE_BYTES
    assert validate_file(path).ok


def test_invalid_utf8_and_malformed_json_do_not_stop_the_file(tmp_path: Path) -> None:
    lines = [
        b'{"task_id": "\xc3\x28"}',
        b"{",
        b"[1, 2]",
        b'"just a string"',
        b"[" * 100000 + b"]" * 100000,  # nesting deeper than the decoder's recursion limit (and MAX_DEPTH)
        ('{"n": ' + "9" * 5000 + "}").encode(),  # an integer too long to convert
        b'{"a": 1, "b": {"c": 1, "c": 2}}',
        json.dumps(_valid()).encode(),
    ]
    report = validate_file(_write(tmp_path / "m.jsonl", lines))
    assert [(i.line, i.rule) for i in report.issues] == [
        (1, "invalid_utf8"),
        (2, "invalid_json"),
        (3, "not_object"),
        (4, "not_object"),
        (5, "nesting_too_deep"),
        (6, "invalid_json"),
        (7, "duplicate_key"),
    ]
    assert [line for line, _ in report.records] == [8]


def test_crlf_and_missing_final_newline(tmp_path: Path) -> None:
    a, b = json.dumps(_valid()), json.dumps(dict(_valid(), task_id="t2"))
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(f"{a}\r\n{b}".encode())
    report = validate_file(path)
    assert report.ok and [line for line, _ in report.records] == [1, 2]


def test_duplicate_task_id_is_reported_on_the_later_line_only(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", [_valid(), dict(_valid(), task_id="t2"), _valid()])
    report = validate_file(path)
    assert [(i.line, i.rule, i.message) for i in report.issues] == [(3, "duplicate_task_id", "first used on line 1")]
    assert [line for line, _ in report.records] == [1, 2]


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_file_raises(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nope.jsonl"
    if kind == "directory":
        path.mkdir()
    with pytest.raises(SpecReadError, match="nope.jsonl"):
        validate_file(path)


# ---------------------------------------------------------------------------------------------- loading


def test_load_spec_task_docs_and_config() -> None:
    task = load_spec_task(str(GOOD), allow_bad_tasks=False)
    assert task.bad_lines == []
    assert [d["line"] for d in task.docs] == list(range(1, 11))
    raw = [json.loads(line) for line in GOOD.read_text().splitlines()]
    for doc, rec in zip(task.docs, raw, strict=True):
        assert {k: doc[k] for k in rec} == rec  # every spec field kept as written
        assert doc["generation_kwargs"] == GENERATION_KWARGS[rec["category"]]
        assert doc["few_shot_examples"] == rec.get("few_shot_examples", [])
        assert doc["metadata"] == rec.get("metadata", {})
    first = task.docs[0]
    assert first["rendered_prompt"] == (
        "Question: What is 2 + 3?\nAnswer: 5\n\nQuestion: What is 10 + 7?\nAnswer: 17\n\n"
        "Question: What is 17 + 25?\nAnswer:"
    )
    assert task.docs[1]["rendered_prompt"] == raw[1]["prompt"]  # no examples: the prompt alone
    cfg = task.task_config
    assert cfg["task"] == "jsonl" and cfg["output_type"] == "generate_until" and cfg["num_fewshot"] == 0
    assert cfg["doc_to_text"] == "rendered_prompt"
    assert cfg["metric_list"] == [{"metric": "jsonl_spec"}]
    assert cfg["metadata"]["spec_file"] == "tasks.jsonl"
    assert len(cfg["metadata"]["spec_sha256"]) == 64
    assert load_spec_task(str(GOOD), False, name="mine").task_config["task"] == "mine"


def test_task_config_goes_through_the_compilers_task_checks() -> None:
    from lmeval.compiler.tasks.taskconfig import build_task_config

    cfg = load_spec_task(str(GOOD), allow_bad_tasks=False).task_config
    spec = build_task_config(cfg, source=str(GOOD))
    assert (spec.name, spec.output_type, spec.num_fewshot) == ("jsonl", "generate_until", 0)
    assert spec.target_delimiter == ""


def test_doc_to_text_renders_prompt_verbatim(tmp_path: Path) -> None:
    """A prompt that looks like Jinja reaches the plan's context unchanged (doc_to_text is a field name)."""
    from lmeval.compiler import compile_plan
    from lmeval.plans import InstanceRecord

    rec = dict(_valid(), prompt="Fill in: {{ name }} and {% raw %}")
    path = tmp_path / "jinja.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert load_spec_task(str(path), False).task_config["doc_to_text"] == "rendered_prompt"
    _, records = compile_plan(["+task=jsonl", f"task.path={path}"])
    (inst,) = [r for r in records if isinstance(r, InstanceRecord)]
    assert inst.context == render_prompt(rec) and inst.context.endswith(rec["prompt"])


def test_bad_lines_refuse_to_load(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(GOOD.read_bytes() + BAD.read_bytes())
    with pytest.raises(SpecError) as err:
        load_spec_task(str(path), allow_bad_tasks=False)
    assert isinstance(err.value, UserError)
    msg = str(err.value)
    assert msg.startswith(f"{path}:11: -: invalid_json (-)") and "38 of 48 lines invalid" in msg
    assert "task.jsonl.allow_bad_tasks=true" in msg
    assert "\n" not in msg


def test_allow_bad_tasks_skips_and_lists_them(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(BAD.read_bytes() + GOOD.read_bytes())
    task = load_spec_task(str(path), allow_bad_tasks=True)
    assert [d["task_id"] for d in task.docs] == [json.loads(x)["task_id"] for x in GOOD.read_text().splitlines()]
    assert [d["line"] for d in task.docs] == list(range(39, 49))
    assert len(task.bad_lines) == 38
    assert task.bad_lines[10] == f"{path}:11: bad-missing: duplicate_task_id (task_id): first used on line 6"


def test_nothing_valid_is_an_error_even_when_bad_tasks_are_allowed(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no valid task"):
        load_spec_task(str(BAD), allow_bad_tasks=True)
    (tmp_path / "e.jsonl").write_bytes(b"")
    with pytest.raises(SpecError, match="empty_file"):
        load_spec_task(str(tmp_path / "e.jsonl"), allow_bad_tasks=True)


# ------------------------------------------------------------------------------- through the compiler


def test_compile_plan_from_spec(tmp_path: Path) -> None:
    from lmeval.compiler import compile_plan
    from lmeval.plans.plan import DocRecord, InstanceRecord

    path = tmp_path / "mixed.jsonl"
    path.write_bytes(GOOD.read_bytes() + b"{not json\n")
    with pytest.raises(SpecError, match=r"mixed.jsonl:11: -: invalid_json"):
        compile_plan(["+task=jsonl", f"task.jsonl.path={path}"])

    header, records = compile_plan(["+task=jsonl", f"task.jsonl.path={path}", "task.jsonl.allow_bad_tasks=true"])
    assert header.extra["spec_bad_lines"] == [  # the file's name, not where it lives (plans/plan/identity.py)
        "mixed.jsonl:11: -: invalid_json (-): " + validate_file(path).issues[0].message
    ]
    docs = [r for r in records if isinstance(r, DocRecord)]
    instances = [r for r in records if isinstance(r, InstanceRecord)]
    assert [d.doc["task_id"] for d in docs] == [json.loads(x)["task_id"] for x in GOOD.read_text().splitlines()]
    for doc, inst in zip(docs, instances, strict=True):
        assert inst.request_type == "generate_until"
        assert inst.context == doc.doc["rendered_prompt"]
        assert inst.generation_kwargs == GENERATION_KWARGS[doc.doc["category"]]
        assert inst.context_ids  # tokenized with the model's tokenizer at compile time
