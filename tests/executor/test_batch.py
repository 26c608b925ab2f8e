"""``export-batch`` / ``import-batch``: a gsm8k plan exported as OpenAI batch lines, answered by the stub
(tests/executor/chatstub.py) as a provider would, and imported; the results equal the chat backend's on the
same answers and score the same. Foreign and repeated ids are refused in one line; a missing id leaves a
partial import that a second import completes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmeval.executor import execute
from lmeval.plans.plan import read_plan
from lmeval.plans.results import read_manifest, read_results
from lmeval.scorer import score
from tests.executor import plantools as pt
from tests.executor.chatstub import Stub, serving
from tests.support import cli_in_process

MODEL = ["model.path=stub-model", "model.engine.model=stub"]


@pytest.fixture(scope="module")
def gsm8k_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pt.compiled(tmp_path_factory.mktemp("batch") / "gsm8k.msgpack", "+task=gsm8k", "run.limit=5")


def _export(plan: Path, out: Path, *extra: str) -> list[dict[str, Any]]:
    rc, stdout, err = cli_in_process("export-batch", str(plan), "--out", str(out), *MODEL, *extra)
    assert rc == 0, err
    return [json.loads(line) for line in out.read_text().splitlines()]


def _provider_output(lines: list[dict[str, Any]], path: Path, stub: Stub) -> list[dict[str, Any]]:
    """What OpenAI's batch API writes for ``lines``: one answer per request, in any order."""
    out = [
        {
            "id": f"batch_req_{n}",
            "custom_id": line["custom_id"],
            "response": {"status_code": 200, "request_id": f"r{n}", "body": stub.respond(line["url"], line["body"])},
            "error": None,
        }
        for n, line in enumerate(reversed(lines))
    ]
    _write(path, out)
    return out


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _import(plan: Path, output: Path, out: Path) -> tuple[int, str]:
    rc, _, err = cli_in_process("import-batch", str(plan), str(output), "--out", str(out), *MODEL)
    return rc, err


def _scores(d: Path) -> dict[str, Any]:
    score(str(d))
    return dict(json.loads((d / "results.json").read_text())["results"]["gsm8k"])


def test_export_import_equals_the_chat_backend(gsm8k_plan: Path, tmp_path: Path) -> None:
    stub = Stub()
    lines = _export(gsm8k_plan, tmp_path / "in.jsonl")
    plan = read_plan(gsm8k_plan)
    ids = [f"{i.instance_id}-{plan.header.plan_hash[:16]}-{i.request_hash[:16]}" for i in plan.instances]
    assert [ln["custom_id"] for ln in lines] == ids
    assert {ln["url"] for ln in lines} == {"/v1/chat/completions"}
    assert [ln["body"]["messages"][0]["content"] for ln in lines] == [i.context for i in plan.instances]
    _provider_output(lines, tmp_path / "out.jsonl", stub)
    rc, err = _import(gsm8k_plan, tmp_path / "out.jsonl", tmp_path / "imported")
    assert rc == 0, err
    manifest = read_manifest(tmp_path / "imported")
    assert manifest.backend == "batch:openai" and manifest.finished and manifest.n_instances == 5

    with serving(stub) as s:
        overrides = ["model.backend=openai-chat", *MODEL, f"model.engine.base_url={s.url}"]
        execute(str(gsm8k_plan), out=str(tmp_path / "chat"), overrides=overrides, progress=False)
    imported = read_results(tmp_path / "imported").sort("instance_id")
    chat = read_results(tmp_path / "chat").sort("instance_id")
    cols = ["instance_id", "request_hash", "response", "responses", "finish_reason"]
    assert imported.select(cols).to_dicts() == chat.select(cols).to_dicts()
    assert _scores(tmp_path / "imported") == _scores(tmp_path / "chat")


def test_completions_endpoint_sends_the_plans_token_ids(gsm8k_plan: Path, tmp_path: Path) -> None:
    lines = _export(gsm8k_plan, tmp_path / "in.jsonl", "--endpoint", "completions")
    plan = read_plan(gsm8k_plan)
    assert {ln["url"] for ln in lines} == {"/v1/completions"}
    assert [ln["body"]["prompt"] for ln in lines] == [i.context_ids for i in plan.instances]
    _provider_output(lines, tmp_path / "out.jsonl", Stub())
    rc, err = _import(gsm8k_plan, tmp_path / "out.jsonl", tmp_path / "r")
    assert rc == 0, err
    assert all("####" in r for r in read_results(tmp_path / "r")["response"])


@pytest.mark.parametrize("bad", ["duplicated", "foreign", "not json"])
def test_duplicated_foreign_or_broken_lines_are_refused(gsm8k_plan: Path, tmp_path: Path, bad: str) -> None:
    lines = _export(gsm8k_plan, tmp_path / "in.jsonl")
    records = _provider_output(lines, tmp_path / "out.jsonl", Stub())
    if bad == "duplicated":
        records.append(dict(records[1]))
        _write(tmp_path / "out.jsonl", records)
        want = f"line 6: custom_id {records[1]['custom_id']} appears twice (first on line 2)"
    elif bad == "foreign":
        records[2] = {**records[2], "custom_id": "0123456789abcdef"}
        _write(tmp_path / "out.jsonl", records)
        want = "line 3: custom_id '0123456789abcdef' is not a request of"
    else:
        text = (tmp_path / "out.jsonl").read_text()
        (tmp_path / "out.jsonl").write_text(text[: len(text) - 30])  # a download cut short
        want = "line 5: not JSON"
    rc, err = _import(gsm8k_plan, tmp_path / "out.jsonl", tmp_path / "r")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and want in err, err
    assert not (tmp_path / "r").exists()  # nothing written


def test_missing_ids_make_a_partial_import_that_a_second_import_completes(gsm8k_plan: Path, tmp_path: Path) -> None:
    stub = Stub()
    lines = _export(gsm8k_plan, tmp_path / "in.jsonl")
    full = _provider_output(lines, tmp_path / "full.jsonl", stub)
    rc, _ = _import(gsm8k_plan, tmp_path / "full.jsonl", tmp_path / "whole")
    assert rc == 0
    gone, errored = full[0]["custom_id"], full[1]["custom_id"]
    partial = [r for r in full if r["custom_id"] != gone]
    partial[0] = {**partial[0], "response": {"status_code": 500, "body": {}}, "error": {"message": "server"}}
    _write(tmp_path / "partial.jsonl", partial)
    out = tmp_path / "r"
    rc, err = _import(gsm8k_plan, tmp_path / "partial.jsonl", out)
    assert rc == 2 and "1 answered with an error; 2 instances still missing" in err, err  # kept, not complete
    assert len(read_results(out)) == 3 and read_manifest(out).finished is None

    rest = _export(gsm8k_plan, tmp_path / "rest.jsonl", "--resume", str(out))
    assert sorted(ln["custom_id"] for ln in rest) == sorted([gone, errored])
    _provider_output(rest, tmp_path / "rest_out.jsonl", stub)
    rc, err = _import(gsm8k_plan, tmp_path / "rest_out.jsonl", out)
    assert rc == 0, err
    assert read_manifest(out).finished and read_manifest(out).stats["imported"] == 5
    cols = ["instance_id", "response"]
    whole = read_results(tmp_path / "whole").sort("instance_id").select(cols)
    assert read_results(out).sort("instance_id").select(cols).to_dicts() == whole.to_dicts()


def test_loglikelihood_tasks_are_not_exported(tmp_path: Path) -> None:
    pt.build(tmp_path / "arc.msgpack", [pt.arc_easy(2)])
    rc, _, err = cli_in_process("export-batch", str(tmp_path / "arc.msgpack"), "--out", str(tmp_path / "x.jsonl"),
                                *MODEL, "--endpoint", "completions")  # fmt: skip
    assert rc == 2 and "task arc_easy: loglikelihood requests are not exported to a batch" in err
    assert not (tmp_path / "x.jsonl").exists()


def test_another_plans_batch_is_refused_though_its_instance_ids_agree(gsm8k_plan: Path, tmp_path: Path) -> None:
    """#53 item 4: the 2-shot plan's answers offered to the 0-shot plan (same task, docs and indices, so the
    same Instance ids) are refused in one line, as is an answer whose request hash was changed."""
    two_shot = pt.compiled(tmp_path / "two.msgpack", "+task=gsm8k", "run.limit=5", "run.num_fewshot=2")
    assert read_plan(two_shot).instances[0].instance_id == read_plan(gsm8k_plan).instances[0].instance_id
    _provider_output(_export(two_shot, tmp_path / "in2.jsonl"), tmp_path / "out2.jsonl", Stub())
    rc, err = _import(gsm8k_plan, tmp_path / "out2.jsonl", tmp_path / "r")
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "line 1: custom_id" in err and "was exported from another plan" in err, err
    assert not (tmp_path / "r").exists()

    records = _provider_output(_export(gsm8k_plan, tmp_path / "in.jsonl"), tmp_path / "out.jsonl", Stub())
    iid, ph, rh = records[3]["custom_id"].split("-")
    records[3]["custom_id"] = f"{iid}-{ph}-{'0' * 16}"
    _write(tmp_path / "out.jsonl", records)
    rc, err = _import(gsm8k_plan, tmp_path / "out.jsonl", tmp_path / "r")
    assert rc == 2 and "line 4: custom_id" in err and "an answer to another prompt" in err, err
    assert not (tmp_path / "r").exists()


def test_an_output_lacking_requests_is_unfinished_exit_2_and_resumable(gsm8k_plan: Path, tmp_path: Path) -> None:
    """#53 item 4: no error lines, two requests simply absent: exit 2, manifest unfinished, resume completes."""
    stub = Stub()
    full = _provider_output(_export(gsm8k_plan, tmp_path / "in.jsonl"), tmp_path / "full.jsonl", stub)
    _write(tmp_path / "part.jsonl", full[2:])
    out = tmp_path / "r"
    rc, err = _import(gsm8k_plan, tmp_path / "part.jsonl", out)
    assert rc == 2 and "imported 3 instances" in err and "2 instances still missing" in err, err
    assert read_manifest(out).finished is None and read_manifest(out).stats["missing"] == 2
    rest = _export(gsm8k_plan, tmp_path / "rest.jsonl", "--resume", str(out))
    assert sorted(ln["custom_id"] for ln in rest) == sorted(r["custom_id"] for r in full[:2])
    _provider_output(rest, tmp_path / "rest_out.jsonl", stub)
    rc, err = _import(gsm8k_plan, tmp_path / "rest_out.jsonl", out)
    assert rc == 0 and read_manifest(out).finished, err


def test_batch_output_is_read_bounded(gsm8k_plan: Path, tmp_path: Path) -> None:
    """#53 item 9: /dev/zero, a FIFO, a sparse 2 GB file and an over-long line are refused in one line without
    being read whole (or blocking); a 1 MB custom_id is not quoted whole in the error line."""
    import os

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as f:
        f.truncate(2 << 30)
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(b'{"custom_id": "' + b"x" * (17 << 20) + b'"}\n')
    big_id = tmp_path / "big_id.jsonl"
    _write(big_id, [{"custom_id": "y" * (1 << 20), "response": None}])
    cases = {
        "/dev/zero": "expected a regular batch output, found a character device",
        str(fifo): "expected a regular batch output, found a FIFO",
        str(sparse): "line 1: longer than 16777216 bytes",
        str(long_line): "line 1: longer than 16777216 bytes",
        str(big_id): "line 1: custom_id 'yyyy",
    }
    for path, want in cases.items():
        rc, err = _import(gsm8k_plan, Path(path), tmp_path / "r")
        assert rc == 2 and len(err.strip().splitlines()) == 1 and want in err, (path, err[:300])
        assert len(err) < 1000, (path, len(err))
    assert not (tmp_path / "r").exists()


def test_plans_with_images_are_not_exported(tmp_path: Path) -> None:
    """#54: a batch file carries no images (yet), so a plan whose Instances show images is refused, not sent
    without them."""
    from lmeval.compiler import compile_to_file
    from tests.imagedata import make_chartqa

    make_chartqa(tmp_path / "data", n=2)
    plan = compile_to_file(["+task=chartqa", f"run.data_dir={tmp_path / 'data'}"], str(tmp_path / "c.msgpack"))
    rc, _, err = cli_in_process("export-batch", str(plan), "--out", str(tmp_path / "x.jsonl"), *MODEL)
    assert rc == 2 and "shows images, which are not exported to a batch" in err
    assert not (tmp_path / "x.jsonl").exists()


def _bodies(records: list[dict[str, Any]], change: Any) -> list[dict[str, Any]]:
    """``records`` with ``change(body)`` applied to every answer's body (a copy)."""
    out = json.loads(json.dumps(records))
    for r in out:
        change(r["response"]["body"])
    return out


def test_a_completions_body_without_its_object_is_read_by_its_choices(gsm8k_plan: Path, tmp_path: Path) -> None:
    """OpenAI's batch output always names the body's ``object``; a compatible server's may not. A completion's
    choices hold ``text`` (a chat completion's ``message``), so such a body is read as what it is: the answers
    equal those of the same output with ``object`` (they were all '' before, read as chat completions)."""
    lines = _export(gsm8k_plan, tmp_path / "in.jsonl", "--endpoint", "completions")
    records = _provider_output(lines, tmp_path / "out.jsonl", Stub())
    _write(tmp_path / "bare.jsonl", _bodies(records, lambda b: b.pop("object")))
    assert _import(gsm8k_plan, tmp_path / "out.jsonl", tmp_path / "named")[0] == 0
    rc, err = _import(gsm8k_plan, tmp_path / "bare.jsonl", tmp_path / "bare")
    assert rc == 0, err
    bare, named = (read_results(tmp_path / d).sort("instance_id")["response"].to_list() for d in ("bare", "named"))
    assert bare == named and all("####" in r for r in bare)


def _text_and_message(b: dict[str, Any]) -> None:
    b.pop("object")
    b["choices"][0]["message"] = {"role": "assistant", "content": "x"}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda b: [b.pop("object"), b["choices"][0].pop("text")], "names no object and its choices hold neither"),
        (_text_and_message, "names no object and its choices hold neither"),
        (lambda b: b.update(object="chat.completion"), "is a chat.completion whose choices do not all hold message"),
        (lambda b: b["choices"][0].pop("text"), "is a text_completion whose choices do not all hold text"),
        (lambda b: b.update(object="list"), "is object 'list', not text_completion or chat.completion"),
    ],
)
def test_an_answer_that_does_not_say_which_endpoint_it_is_from_is_refused(
    gsm8k_plan: Path, tmp_path: Path, change: Any, why: str
) -> None:
    lines = _export(gsm8k_plan, tmp_path / "in.jsonl", "--endpoint", "completions")
    records = _provider_output(lines, tmp_path / "out.jsonl", Stub())
    _write(tmp_path / "out.jsonl", _bodies(records, change))
    rc, err = _import(gsm8k_plan, tmp_path / "out.jsonl", tmp_path / "r")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"out.jsonl line 1: custom_id {records[0]['custom_id']}: the answer {why}" in err, err
    assert not (tmp_path / "r").exists()  # nothing written
