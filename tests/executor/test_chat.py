"""The ``openai-chat`` backend against a local stub (tests/executor/chatstub.py): what it sends, that a gsm8k
run scores as the completions path does on the same answers, its refusals, and its faults (429 with
Retry-After, 500, timeout, truncated JSON, 400, the request budget) ending in a retried success or one line
naming the request, with nothing lost on resume."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from lmeval.executor import execute
from lmeval.executor.backends.http import HttpClient, RequestFailed
from lmeval.executor.errors import ExecuteError
from lmeval.plans.plan import read_plan
from lmeval.plans.results import read_manifest, read_results
from lmeval.scorer import score
from tests.executor import plantools as pt
from tests.executor.chatstub import Stub, serving
from tests.support import cli_in_process


@pytest.fixture(scope="module")
def gsm8k_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real gsm8k task (5-shot, lm-eval's config), 4 documents, compiled for the tiny model."""
    return pt.compiled(tmp_path_factory.mktemp("chat") / "gsm8k.msgpack", "+task=gsm8k", "run.limit=4")


@pytest.fixture
def stub() -> Iterator[Stub]:
    with serving() as s:
        yield s


def _overrides(stub: Stub, backend: str = "openai-chat", **engine: Any) -> list[str]:
    settings = {"base_url": stub.url, "model": "stub", "backoff_s": 0.001, "timeout_s": 10, **engine}
    return [f"model.backend={backend}", "model.path=stub-model"] + [
        f"model.engine.{k}={v}" for k, v in settings.items()
    ]


def _timeout(fault: str) -> float:
    """The client's timeout: short where the fault is a stalled answer (the stub stalls 2.5 s), else ample
    (a loaded CI machine must not time out a normal answer)."""
    return 1.0 if fault == "timeout" else 10.0


def _run(plan: Path, out: Path, overrides: list[str]) -> pl.DataFrame:
    execute(str(plan), out=str(out), overrides=overrides, progress=False)
    return read_results(out).sort("instance_id")


def _exact_match(results_dir: Path) -> dict[str, Any]:
    score(str(results_dir))
    res = json.loads((results_dir / "results.json").read_text())["results"]["gsm8k"]
    return {k: v for k, v in res.items() if k.startswith("exact_match")}


def test_chat_sends_messages_and_scores_as_completions(gsm8k_plan: Path, stub: Stub, tmp_path: Path) -> None:
    chat = _run(gsm8k_plan, tmp_path / "chat", _overrides(stub))
    sent = [b for p, b in stub.bodies if p.endswith("/chat/completions")]
    plan = read_plan(gsm8k_plan)
    assert len(sent) == len(plan.instances) == 4
    by_prompt = {b["messages"][0]["content"]: b for b in sent}
    for inst in plan.instances:
        body = by_prompt[inst.context]  # the plan's rendered prompt, as one user message
        assert body["messages"] == [{"role": "user", "content": inst.context}]
        kw = inst.generation_kwargs or {}
        assert body["stop"] == kw["until"] and body["max_tokens"] == 256 and body["temperature"] == 0.0
    assert all("####" in r and "Question:" not in r for r in chat["response"])  # cut at the stop string
    assert read_manifest(tmp_path / "chat").backend == "openai-chat"

    completions = _run(gsm8k_plan, tmp_path / "cmpl", _overrides(stub, "openai"))
    assert chat["response"].to_list() == completions["response"].to_list()
    em_chat, em_cmpl = _exact_match(tmp_path / "chat"), _exact_match(tmp_path / "cmpl")
    assert em_chat == em_cmpl
    assert 0 < em_chat["exact_match,strict-match"] < 1  # the stub answers some right, some wrong


def test_loglikelihood_and_chat_templated_plans_are_refused(stub: Stub, tmp_path: Path) -> None:
    arc = pt.build(tmp_path / "arc.msgpack", [pt.arc_easy(2)])
    assert arc.n_instances > 0
    rc, _, err = cli_in_process("execute", str(tmp_path / "arc.msgpack"), "--out", str(tmp_path / "a"),
                                "--no-progress", *_overrides(stub))  # fmt: skip
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "task arc_easy: loglikelihood requests need log-probabilities" in err
    # a chat-templated plan whose Instances keep no messages (an older lmeval's): refused, naming task and doc
    pt.build(tmp_path / "tmpl.msgpack", [pt.gsm8k(2)], extra_config={"run": {"apply_chat_template": True}})
    with pytest.raises(ExecuteError, match=r"task gsm8k doc 0: the plan was compiled with a chat template but keeps"):
        execute(str(tmp_path / "tmpl.msgpack"), out=str(tmp_path / "t"), overrides=_overrides(stub), progress=False)
    assert not stub.bodies and not (tmp_path / "a").exists() and not (tmp_path / "t").exists()


def test_a_chat_templated_plan_sends_its_messages(stub: Stub, tmp_path: Path) -> None:
    plan_path = pt.compiled(tmp_path / "chat.msgpack", "+task=gsm8k", "run.limit=2", "run.apply_chat_template=true")
    plan = read_plan(plan_path)
    for inst in plan.instances:  # the plan keeps the conversation its context was rendered from
        assert inst.messages is not None and inst.messages[-1]["role"] == "user"
        assert [m["role"] for m in inst.messages] == ["user", "assistant"] * 5 + ["user"]  # 5-shot, multi-turn
        assert inst.messages[-1]["content"] in inst.context and inst.context.startswith("<|im_start|>user\n")
    res = _run(plan_path, tmp_path / "out", _overrides(stub))
    sent = [b["messages"] for p, b in stub.bodies if p.endswith("/chat/completions")]
    assert sorted(map(json.dumps, sent)) == sorted(json.dumps(i.messages) for i in plan.instances)
    assert res.height == 2 and all("####" in r for r in res["response"])


def test_retry_after_is_honoured(stub: Stub) -> None:
    client = HttpClient({"base_url": stub.url, "backoff_s": 5})
    waits: list[float] = []
    client.sleep = waits.append
    stub.faults = ["429", "500"]
    assert client.request("GET", "/models")["data"]  # GET is not faulted: sanity
    assert client.request("POST", "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert waits == [0.05, 10.0]  # Retry-After, then the doubled backoff (5 s, 10 s) of the second failure
    assert client.sent == 4 and client.retried == 2


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "truncated"])
def test_each_fault_ends_in_a_retried_success(gsm8k_plan: Path, stub: Stub, tmp_path: Path, fault: str) -> None:
    clean = _run(gsm8k_plan, tmp_path / "clean", _overrides(stub))
    stub.faults = [None, fault, fault]  # the second request fails twice, then is answered
    faulted = _run(gsm8k_plan, tmp_path / "faulted", _overrides(stub, concurrency=1, timeout_s=_timeout(fault)))
    assert faulted["response"].to_list() == clean["response"].to_list()
    assert len(stub.bodies) == 4 + 4 + 2


@pytest.mark.parametrize("fault", ["500", "timeout", "truncated", "400"])
def test_a_request_that_keeps_failing_is_named_and_resumed(
    gsm8k_plan: Path, stub: Stub, tmp_path: Path, fault: str
) -> None:
    clean = _run(gsm8k_plan, tmp_path / "clean", _overrides(stub))
    stub.faults = [None, None, fault, fault]
    out = tmp_path / "r"
    args = (
        "execute",
        str(gsm8k_plan),
        "--out",
        str(out),
        "--no-progress",
        *_overrides(stub, concurrency=1, retries=1, timeout_s=_timeout(fault)),
    )
    rc, _, err = cli_in_process(*args)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{gsm8k_plan}: task gsm8k doc " in err and " instance " in err and "/chat/completions" in err
    assert len(read_results(out)) == 2  # the two answered before the failure were written
    sent = len(stub.bodies)
    rc, _, err = cli_in_process(*args)
    assert rc == 0, err
    assert len(stub.bodies) - sent == 2  # the resume asked only what was missing
    assert read_results(out).sort("instance_id")["response"].to_list() == clean["response"].to_list()
    assert read_manifest(out).finished


def test_request_budget_stops_the_run_and_resume_finishes(gsm8k_plan: Path, stub: Stub, tmp_path: Path) -> None:
    out = tmp_path / "b"
    with pytest.raises(RequestFailed, match=r"request budget \(model.engine.max_requests=3\) is spent"):
        execute(str(gsm8k_plan), out=str(out), overrides=_overrides(stub, concurrency=1, max_requests=3),
                progress=False)  # fmt: skip
    assert len(stub.bodies) == 3 and len(read_results(out)) == 3
    _run(gsm8k_plan, out, _overrides(stub, concurrency=1, max_requests=3))
    assert len(stub.bodies) == 4 and len(read_results(out)) == 4


def test_a_wrong_address_fails_at_once(tmp_path: Path) -> None:
    with serving() as s:
        url = s.url  # the port is free again once the stub is gone
    client = HttpClient({"base_url": url, "backoff_s": 5})
    client.sleep = lambda s: pytest.fail("a refused connection is not retried")
    with pytest.raises(RequestFailed, match=r"/chat/completions: cannot reach the server"):
        client.request("POST", "/chat/completions", {"model": "m"})
    assert client.sent == 1


def test_a_gen_prefix_is_continued_as_the_last_assistant_message() -> None:
    from lmeval.executor.backends.openai_chat import chat_body
    from lmeval.executor.requests import GenInput, GenParams

    p = GenParams(max_tokens=8, stop=["\n"])
    msgs = [{"role": "user", "content": "Q: 1+1"}, {"role": "assistant", "content": "A: The answer is"}]
    body = chat_body("m", GenInput([1], p, "k", "ctx", None, msgs))
    assert body["messages"] == msgs and body["continue_final_message"] is True and not body["add_generation_prompt"]
    plain = chat_body("m", GenInput([1], p, "k", "ctx", None, msgs[:1]))
    assert plain["messages"] == msgs[:1] and "continue_final_message" not in plain
    assert chat_body("m", GenInput([1], p, "k", "ctx"))["messages"] == [{"role": "user", "content": "ctx"}]


def test_multiple_choice_by_generation_is_a_task_of_its_own_and_both_score(stub: Stub, tmp_path: Path) -> None:
    """#39: arc_easy by generation (``arc_easy@gen``, compiler/formats) on the chat backend is another task
    identity than arc_easy by log-likelihood; the log-likelihood plan is refused there naming the way out,
    and each scores on a backend that can run it."""
    ll = pt.compiled(tmp_path / "ll.msgpack", "+task=arc_easy", "run.limit=6")
    gen = pt.compiled(tmp_path / "gen.msgpack", "+task=arc_easy@gen", "run.limit=6")
    (t_ll,), (t_gen,) = read_plan(ll).header.tasks, read_plan(gen).header.tasks
    assert (t_ll.name, t_gen.name) == ("arc_easy", "arc_easy@gen") and t_ll.task_hash != t_gen.task_hash
    assert t_gen.output_type == "generate_until" and t_gen.config["format"]["name"] == "gen"
    # compiled for the chat backend, a multiple-choice task is taken by generation: the same task, and a note
    auto = read_plan(pt.compiled(tmp_path / "auto.msgpack", "+task=arc_easy", "run.limit=6",
                                 "model.backend=openai-chat")).header  # fmt: skip
    assert [(t.name, t.task_hash) for t in auto.tasks] == [("arc_easy@gen", t_gen.task_hash)]
    assert any("model.backend=openai-chat returns no log-probabilities" in n for n in auto.extra["notes"])
    mcf = read_plan(pt.compiled(tmp_path / "mcf.msgpack", "+task=arc_easy", "run.limit=6", "run.format=mcf",
                                "model.backend=openai-chat")).header  # fmt: skip
    assert [t.name for t in mcf.tasks] == ["arc_easy@mcf"] and "notes" not in mcf.extra  # run.format chooses
    rc, _, err = cli_in_process("execute", str(ll), "--out", str(tmp_path / "refused"), "--no-progress",
                                *_overrides(stub))  # fmt: skip
    assert rc == 2 and "arc_easy@gen or run.format=gen" in err and len(err.strip().splitlines()) == 1

    stub.answer = lambda prompt: " B. because\n\nQuestion: next"  # always the second choice
    _run(gen, tmp_path / "gen", _overrides(stub))
    score(str(tmp_path / "gen"))
    res = json.loads((tmp_path / "gen" / "results.json").read_text())["results"]["arc_easy@gen"]
    docs = read_plan(gen).docs
    assert res["exact_match,letter"] == sum(1 for d in docs if d.target == 1) / len(docs) == 2 / 6
    _run(ll, tmp_path / "ll", ["model.backend=fake"])
    score(str(tmp_path / "ll"))
    assert "acc,none" in json.loads((tmp_path / "ll" / "results.json").read_text())["results"]["arc_easy"]


def test_images_are_sent_as_data_uris_of_the_plans_bytes(stub: Stub, tmp_path: Path) -> None:
    """#54: a chartqa plan (tests/imagedata.py) on a chat endpoint: each image as an ``image_url`` part, a
    data URI of the plan's own bytes and MIME type, before the prompt's text (lm-eval's API models' layout)."""
    import base64

    from lmeval.plans import media_dir
    from tests.imagedata import make_chartqa

    make_chartqa(tmp_path / "data")
    from lmeval.compiler import compile_to_file

    plan = compile_to_file(["+task=chartqa", f"run.data_dir={tmp_path / 'data'}"], str(tmp_path / "chartqa.msgpack"))
    stub.answer = lambda content: "The bars. Final Answer: 3"
    res = _run(plan, tmp_path / "out", _overrides(stub))
    sent = [b for p, b in stub.bodies if p.endswith("/chat/completions")]
    insts = read_plan(plan).instances
    assert len(sent) == len(insts) == 4 and res["response"].to_list() == ["The bars. Final Answer: 3"] * 4
    by_text = {b["messages"][-1]["content"][-1]["text"]: b for b in sent}
    for inst in insts:
        (msg,) = by_text[inst.context]["messages"]
        image, text = msg["content"]
        assert msg["role"] == "user" and text == {"type": "text", "text": inst.context}
        head, data = image["image_url"]["url"].split(",", 1)
        assert head == "data:image/png;base64" and image["type"] == "image_url"
        sha = inst.media[0]["sha256"]  # type: ignore[index]
        assert base64.b64decode(data) == (media_dir(plan) / sha).read_bytes()
