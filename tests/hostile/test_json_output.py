"""JSON outputs are valid JSON whatever the documents hold (#53 item 8, acceptance 3): ``show --jsonl`` and
``diff --json`` lines parse with a JSON parser though documents hold C0/C1 controls and bidi characters, and
stay terminal-safe (no raw control reaches the terminal); ``common.jsontext.json_text`` writes lone
surrogates and non-finite floats as valid JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

from lmeval.common import json_text, term_safe
from lmeval.common.termsafe import UNSAFE
from tests.executor.plantools import arc_easy, build, compiled
from tests.support import cli_in_process

HOSTILE = "C0 \x01\x1b[2J\x7f C1 \x85\x9b bidi \u202e\u2066 tab\t end"


def _parse_lines(text: str) -> list[dict]:
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_json_text_is_valid_json_for_surrogates_controls_and_non_finite_floats() -> None:
    value = {"s": "a\ud800b\udfff" + HOSTILE, "x": [math.nan, math.inf, -math.inf, 1.5]}
    for terminal in (False, True):
        text = json_text(value, terminal=terminal)
        text.encode("utf-8")  # no lone surrogate left raw: encodable
        back = json.loads(text)  # strict JSON: NaN / Infinity would parse, so check for them by name below
        assert back["s"] == value["s"] and back["x"] == ["nan", "inf", "-inf", 1.5]
        assert "NaN" not in text and "Infinity" not in text
        if terminal:
            assert not UNSAFE.search(text) and term_safe(text) == text  # the escaper has nothing left to do
    assert json_text({"a": "é\x85"}) == '{"a": "é\x85"}'  # files: ensure_ascii=False bytes, C1 raw (valid JSON)
    assert json_text({"a": 1}, indent=2) == json.dumps({"a": 1}, indent=2, ensure_ascii=False)


def test_show_jsonl_and_diff_json_parse_though_documents_hold_controls(tmp_path: Path) -> None:
    name, otype, docs = arc_easy(3, prefix=HOSTILE)
    plan = tmp_path / "p.msgpack"
    build(plan, [(name, otype, docs)])
    rc, out, err = cli_in_process("show", "--jsonl", str(plan))
    assert rc == 0, err
    lines = _parse_lines(out)
    assert len(lines) == sum(len(i) for _, i in docs)
    assert all(line["arguments"][0].startswith(HOSTILE) for line in lines), lines[0]
    assert not UNSAFE.search(out)  # and still nothing raw for the terminal
    rc, text, err = cli_in_process("show", str(plan), "--examples", "1")  # terminal output: escaped as before
    assert rc == 0 and "\\x85" in text and "\\u202e" in text and not UNSAFE.search(text), err
    other = tmp_path / "q.msgpack"
    name2, _, docs2 = arc_easy(3, prefix="x" + HOSTILE)
    build(other, [(name2, otype, docs2)])
    rc, text, err = cli_in_process("diff", "--json", "--show", "3", str(plan), str(other))
    assert rc == 1, err
    prompts = json.loads(text)["prompts"]
    assert prompts and all("\x9b" in p["diff"] and "\u202e" in p["diff"] for p in prompts), prompts
    assert not UNSAFE.search(text)


def test_show_jsonl_of_mmlu_5_shot_parses_line_by_line(tmp_path: Path) -> None:
    """MMLU 5-shot on the full test sets of the subjects whose documents hold C1 controls (such as U+0085:
    316 of full MMLU 5-shot's 56,168 lines, all from professional_law and management; sociology's is in a field
    no prompt shows): every line parses, the C1 characters come back as they are. (Full MMLU: the same 316
    lines, 20-30 s here, so checked by hand: docs/reference/hostile-input.md.)"""
    subjects = "[mmlu_professional_law,mmlu_management,mmlu_sociology]"
    plan = compiled(tmp_path / "mmlu.msgpack", f"run.tasks={subjects}", "run.num_fewshot=5", "model=tiny")
    rc, out, err = cli_in_process("show", "--jsonl", str(plan))
    assert rc == 0, err
    lines = _parse_lines(out)
    assert len(lines) == 4 * (1534 + 103 + 201)
    c1 = [x for x in lines if any(0x80 <= ord(c) <= 0x9F for c in x["arguments"][0] + x["arguments"][1])]
    assert len(c1) == 316 and {x["task"] for x in c1} == {"mmlu_professional_law", "mmlu_management"}
    assert not UNSAFE.search(out)
