"""The bill before the run (#63): what a plan asks of the engine, counted from its token ids before anything runs.

``estimate_tokens`` counts, over the plan's distinct requests (equal request hashes once, as ``execute`` runs
them): the requests, those whose answers are already stored (``StoredLookup``, injected: the result store's
lookup; default none), the prompt tokens still to run, their distinct token positions (the prefix tree of
executor/efficiency.py, a perfect prefix cache) and the tokens the engine will compute: the requests the vllm
backend sends, in its order (executor/backends/vllm_engine.py: next-token groups, then prompt log-probs window
by window, then the rescored ones), through vLLM's prefix cache, which hits whole blocks only (block hashes
chained from the first block, at most ``len(prompt) - 1`` tokens), plus the one token each scoring request
samples. That is the figure the backend's ``cache_stats["computed_tokens"]`` counts, with two assumptions: the
KV cache is large enough that nothing the plan needs again is evicted, and generation adds what it generates
(bounded by ``max_gen_toks`` x repeats). Time comes from a rate: measured on a calibration slice of the same
plan (executor/calibrate.py) or given (``--tokens-per-s``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from lmeval.executor.backends import MAX_TOKEN_IDS, next_token_groups, reuse_order
from lmeval.executor.cost import default_max_gen_toks, plan_cost, total
from lmeval.executor.efficiency import distinct_positions
from lmeval.executor.engineconf import CPU_BLOCK_SIZE
from lmeval.executor.jobloop import SCORING
from lmeval.executor.requests import ScoreInput, ScoreJob, max_tokens_of, score_job
from lmeval.plans import InstanceRecord, PlanHeader, TokenRule

# the instance ids of the requests given (one Instance per distinct request) whose answers the result store
# holds for the run's model: the shape of the store's ``stored_request_ids``
StoredLookup = Callable[[Sequence[InstanceRecord]], set[str]]
VLLM_CPU_BLOCK = CPU_BLOCK_SIZE  # the block size execute gives vLLM on a CPU (executor/engineconf.py)
VLLM_GPU_BLOCK = 16  # vLLM's own default on a GPU
NO_TRUNCATION = 1 << 30  # requests are counted as the plan holds them (the engine's max_model_len unknown)


def no_store(instances: Sequence[InstanceRecord]) -> set[str]:
    """The default lookup: nothing is stored."""
    return set()


def request_key(inst: InstanceRecord) -> str:
    """The key equal requests share (executor/jobloop.py's ``group``)."""
    return inst.request_hash or f"instance:{inst.instance_id}"


@dataclass
class TokenEstimate:
    """The token part of an estimate: cheap, computed from the plan alone (``estimate_tokens``)."""

    requests: int = 0  # distinct requests of the plan
    stored: int = 0  # of them, answered by the result store (not run)
    prompt_tokens: int = 0  # prompt tokens (context + continuation ids) of the requests to run
    distinct_tokens: int = 0  # their distinct token positions (prefix tree: a perfect prefix cache)
    block_size: int = VLLM_CPU_BLOCK  # the prefix cache's granularity the computed tokens are counted at
    scoring_tokens: int = 0  # tokens the engine computes for scoring requests (uncached prompt + 1 sampled each)
    gen_prompt_tokens: int = 0  # uncached prompt tokens of generation requests
    gen_requests: int = 0  # generation requests to run
    max_gen_tokens: int = 0  # the most tokens they may generate (max_gen_toks x repeats)
    stop_sequences: list[str] = field(default_factory=list)  # the distinct ``until`` strings that end them early
    without_ids: int = 0  # requests the plan holds no token ids for (not counted)

    @property
    def to_compute(self) -> int:
        """Tokens the engine computes before generating (scoring, and generation prompts)."""
        return self.scoring_tokens + self.gen_prompt_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "to_compute": self.to_compute}


@dataclass
class Rates:
    """An engine's speed: tokens computed per second while scoring or reading prompts, and generated per second
    (``None``: not measured); ``source`` says where they come from."""

    prefill_per_s: float
    decode_per_s: float | None = None
    source: str = "given"

    def seconds(self, est: TokenEstimate, generated: int | None = None) -> float:
        """Predicted engine time for ``est``: its computed tokens at the prefill rate, plus ``generated`` tokens
        (default the bound) at the decode rate (the prefill rate where none was measured)."""
        gen = est.max_gen_tokens if generated is None else generated
        decode = self.decode_per_s or self.prefill_per_s
        return est.to_compute / self.prefill_per_s + (gen / decode if gen else 0.0)


class BlockCache:
    """vLLM's prefix cache as far as counting goes: full blocks of ``block_size`` tokens, each keyed by its
    tokens and the key of the block before it; a prompt reads its longest run of cached leading blocks (never
    its last token) and leaves all its full blocks cached. Nothing is evicted."""

    def __init__(self, block_size: int) -> None:
        if block_size < 1:
            raise ValueError(f"block size {block_size}: must be at least 1")
        self.block_size = block_size
        self._seen: set[tuple[int, ...]] = set()

    def _keys(self, ids: Sequence[int]) -> list[tuple[int, ...]]:
        bs, keys, prev = self.block_size, [], 0
        for start in range(0, len(ids) - bs + 1, bs):
            key = (prev, *ids[start : start + bs])
            prev = hash(key)
            keys.append(key)
        return keys

    def compute(self, ids: Sequence[int], read: bool = True) -> int:
        """Tokens of prompt ``ids`` the engine computes (those not read from the cache)."""
        keys = self._keys(ids)
        hit = 0
        if read:
            most = max(len(ids) - 1, 0) // self.block_size
            while hit < most and keys[hit] in self._seen:
                hit += 1
        self._seen.update(keys)
        return len(ids) - hit * self.block_size


def scoring_computed(inputs: Sequence[ScoreInput], cache: BlockCache) -> int:
    """Tokens the vllm backend computes for scoring ``inputs`` (its ``score``: the same requests, same order)."""
    groups, rest = next_token_groups(inputs)
    total = 0
    for members in groups:
        x = inputs[members[0]]
        n_requests = -(-len({inputs[i].ids[-1] for i in members}) // MAX_TOKEN_IDS)
        for _ in range(n_requests):
            total += cache.compute(x.ids[: x.ctxlen]) + 1
    sub = [inputs[i] for i in rest]
    again = []
    for i in reuse_order(sub, NO_TRUNCATION):
        x = sub[i]
        before = len(x.ids) - cache.compute(x.ids)  # tokens read from the cache
        total += len(x.ids) - before + 1
        if before > x.ctxlen - 1:  # the hit reached the continuation: scored again without the cache
            again.append(x)
    for x in again:
        total += cache.compute(x.ids, read=False) + 1
    return total


def estimate_tokens(
    header: PlanHeader,
    instances: Iterable[InstanceRecord],
    stored: StoredLookup = no_store,
    block_size: int = VLLM_CPU_BLOCK,
) -> TokenEstimate:
    """The token part of the estimate of ``instances`` (a plan's, in plan order)."""
    firsts: dict[str, InstanceRecord] = {}
    for inst in instances:
        firsts.setdefault(request_key(inst), inst)
    known = stored(list(firsts.values()))
    todo = [i for i in firsts.values() if i.instance_id not in known]
    est = TokenEstimate(requests=len(firsts), stored=len(firsts) - len(todo), block_size=block_size)
    rule = header.model.token_rule or TokenRule()
    default_max = default_max_gen_toks(header)
    cache = BlockCache(block_size)
    score_jobs: list[ScoreJob] = []
    prompts: list[list[int]] = []
    stops: set[str] = set()
    for inst in todo:
        if inst.context_ids is None:
            est.without_ids += 1
            continue
        if inst.request_type in SCORING.request_types:
            job = score_job(inst, None, rule, NO_TRUNCATION, f"{inst.task} doc {inst.doc_id}")
            score_jobs.append(job)
            prompts += [w.ids for w in job.windows]
            est.prompt_tokens += len(inst.context_ids) + len(inst.continuation_ids or [])
        elif inst.request_type == "generate_until":
            kwargs = inst.generation_kwargs or {}
            est.gen_requests += 1
            est.max_gen_tokens += max_tokens_of(kwargs, default_max) * max(inst.repeats, 1)
            until = kwargs.get("until")
            until = [until] if isinstance(until, str) else until if isinstance(until, list) else []
            stops.update(str(u) for u in until)
            prompts.append(list(inst.context_ids))
            est.prompt_tokens += len(inst.context_ids)
    est.distinct_tokens = distinct_positions(prompts)
    score_jobs.sort(key=lambda j: (-j.size, j.key))  # the job loop's order (executor/jobloop.py)
    est.scoring_tokens = scoring_computed([w for j in score_jobs for w in j.windows], cache)
    gens = sorted((i for i in todo if i.request_type == "generate_until" and i.context_ids is not None),
                  key=lambda i: (-len(i.context_ids or ()), request_key(i)))  # fmt: skip
    est.gen_prompt_tokens = sum(cache.compute(list(i.context_ids or ())) for i in gens)
    est.stop_sequences = sorted(stops)
    return est


def block_size_of(header: PlanHeader, on_gpu: bool) -> int:
    """The prefix cache's block size a run of ``header`` gets: the engine config's ``block_size``, else the one
    execute sets on a CPU (executor/engineconf.py), else vLLM's default on a GPU."""
    model = header.config.get("model") if isinstance(header.config, dict) else None
    engine = model.get("engine") if isinstance(model, dict) else None
    value = engine.get("block_size") if isinstance(engine, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return VLLM_GPU_BLOCK if on_gpu else VLLM_CPU_BLOCK


def on_gpu() -> bool:
    """Whether this machine shows an NVIDIA device (without importing torch)."""
    return os.path.exists("/dev/nvidia0")


def engine_block_size(backend: Any, header: PlanHeader) -> int:
    """The started engine's prefix-cache block size (vLLM's config), else the plan's or the device default."""
    try:
        return int(backend.llm.llm_engine.vllm_config.cache_config.block_size)
    except (AttributeError, TypeError, ValueError):
        return block_size_of(header, on_gpu())


def run_estimate(header: PlanHeader, todo: Sequence[InstanceRecord], backend: Any) -> dict[str, Any]:
    """The token part of the estimate of what one execute runs (``todo``), for its manifest's ``estimate``."""
    return estimate_tokens(header, todo, block_size=engine_block_size(backend, header)).to_dict()


def estimate_note(estimate: dict[str, Any], computed: int) -> str:
    """``, estimate 52291 tokens to compute (computed 52291)`` for execute's summary line; empty without one."""
    predicted = estimate.get("to_compute")
    if not isinstance(predicted, int) or not computed:
        return ""
    gen = estimate.get("max_gen_tokens") or 0
    bound = f" + at most {gen} generated" if gen else ""
    return f", estimate {predicted}{bound} tokens to compute (computed {computed})"


def estimate_lines(est: TokenEstimate, rates: Rates | None = None) -> list[str]:
    """What ``lmeval show --estimate`` and ``lmeval run --dry-run`` print."""
    lines = [
        f"requests            {est.requests} ({est.stored} already stored, {est.requests - est.stored} to run)",
        f"prompt tokens       {est.prompt_tokens} (of the requests to run)",
        f"distinct tokens     {est.distinct_tokens} (shared prefixes once)",
        f"tokens to compute   {est.to_compute} (prefix cache in blocks of {est.block_size}; "
        f"{est.scoring_tokens} scoring, {est.gen_prompt_tokens} generation prompts)",
    ]
    if est.gen_requests:
        stops = ", ".join(repr(s) for s in est.stop_sequences[:6]) or "none"
        more = f" and {len(est.stop_sequences) - 6} more" if len(est.stop_sequences) > 6 else ""
        lines.append(
            f"generation          {est.gen_requests} requests, at most {est.max_gen_tokens} tokens "
            f"(max_gen_toks x repeats; stop at {stops}{more})"
        )
    if est.without_ids:
        lines.append(f"not counted         {est.without_ids} requests without token ids")
    if rates is not None:
        secs = rates.seconds(est, 0)
        rate = f"{rates.prefill_per_s:.0f} tokens/s ({rates.source})"
        line = f"time                {secs:.1f}s at {rate}"
        if est.max_gen_tokens:
            line += f", up to {rates.seconds(est):.1f}s with at most {est.max_gen_tokens} tokens generated"
            if rates.decode_per_s:
                line += f" at {rates.decode_per_s:.0f} tokens/s"
        lines.append(line)
    return lines


def price_line(
    header: PlanHeader, instances: Sequence[InstanceRecord], stored: set[str], pin: float | None, pout: float | None
) -> str:
    """The API bill of the requests the store does not answer (``stored``: instance ids), at ``show --cost``'s
    prices (executor/cost.py; generation at its maximum length)."""
    answered = {request_key(i) for i in instances if i.instance_id in stored}
    t = total(plan_cost(header, [i for i in instances if request_key(i) not in answered]))
    price = t.price(pin or 0.0, pout or 0.0)
    return (
        f"price               {price:.4f} at {pin or 0:g} in, {pout or 0:g} out per million tokens "
        f"({t.prompt_tokens} prompt tokens, at most {t.max_gen_tokens} generated)"
    )
