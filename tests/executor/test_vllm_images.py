"""#54 acceptance 4: vLLM receives a plan's media hashes as ``multi_modal_uuids``. A recording stand-in for vLLM's
``LLM`` (``enqueue`` and the engine's ``step``) takes the prompts lmeval's vLLM backend builds for the chartqa
plan's generations (tests/imagedata.py): each carries the plan's token ids, the decoded images as
``multi_modal_data`` and exactly the plan's image sha256s, in order, as ``multi_modal_uuids``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmeval.compiler import compile_to_file
from lmeval.executor.backends.vllm_engine import VLLMBackend
from lmeval.executor.requests import GenInput, GenParams
from lmeval.plans import media_dir, pixel_digest, read_plan
from tests.imagedata import make_chartqa


@dataclass
class _Out:
    request_id: str
    outputs: list[Any]
    finished: bool = True
    prompt_token_ids: list[int] = field(default_factory=list)
    num_cached_tokens: int = 0


@dataclass
class _Completion:
    text: str
    token_ids: list[int]
    finish_reason: str = "stop"
    index: int = 0


class _Engine:
    def __init__(self) -> None:
        self.queue: list[str] = []

    def has_unfinished_requests(self) -> bool:
        return bool(self.queue)

    def step(self) -> list[_Out]:
        done, self.queue = self.queue, []
        return [_Out(r, [_Completion(f"answer {r}", [5, 6])]) for r in done]

    def abort_request(self, ids: list[str]) -> None:
        self.queue = []


class _RecordingLLM:
    def __init__(self) -> None:
        self.prompts: list[Any] = []
        self.llm_engine = _Engine()

    def enqueue(self, prompts: list[Any], params: Any, use_tqdm: bool = False) -> list[str]:
        ids = [f"{len(self.prompts) + i}-x" for i in range(len(prompts))]
        self.prompts += prompts
        self.llm_engine.queue += [i.split("-")[0] for i in ids]
        return ids


def test_vllm_gets_the_plans_media_hashes_as_multi_modal_uuids(tmp_path: Path) -> None:
    make_chartqa(tmp_path / "data", n=3)
    plan = compile_to_file(["+task=chartqa", f"run.data_dir={tmp_path / 'data'}"], str(tmp_path / "p.msgpack"))
    insts = read_plan(plan).instances
    inputs = []
    for inst in insts:
        assert inst.media and inst.context_ids
        images = tuple((media_dir(plan) / m["sha256"]).read_bytes() for m in inst.media)
        inputs.append(GenInput(list(inst.context_ids), GenParams(max_tokens=4, stop=[]), inst.request_hash,
                               inst.context, None, None, tuple(inst.media), images))  # fmt: skip
    inputs.append(GenInput([1, 2, 3], GenParams(max_tokens=4, stop=[]), "text-only", "abc"))
    backend = VLLMBackend.__new__(VLLMBackend)
    llm = _RecordingLLM()
    backend.llm = llm  # type: ignore[assignment]
    backend.cache_stats = {"cached_prompt_tokens": 0, "rescored": 0, "computed_tokens": 0}
    outs = dict(backend.generate(inputs))
    assert sorted(outs) == [0, 1, 2, 3] and outs[0].samples[0].token_ids == [5, 6]
    for inst, prompt in zip(insts, llm.prompts, strict=False):
        assert prompt["prompt_token_ids"] == inst.context_ids
        assert prompt["multi_modal_uuids"] == {"image": [m["sha256"] for m in inst.media or []]}
        (img,) = prompt["multi_modal_data"]["image"]
        img.load()
        assert pixel_digest(img.mode, img.width, img.height, img.tobytes()) == inst.media[0]["pixels"]  # type: ignore[index]
    assert llm.prompts[3] == {"prompt_token_ids": [1, 2, 3]}  # a text-only request is a plain token prompt
