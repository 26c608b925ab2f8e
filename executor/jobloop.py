"""The one job loop: Instances in, result rows out, for every kind of request.

Instances with the same answer key's request part (``executor/answerkey.py``: the request hash, the repeats
asked, a sampled generation's engine seed) are one job (run once, answered for each). A kind of request
(``SCORING``: loglikelihood and loglikelihood_rolling; ``GENERATION``: generate_until) says how a job is
built from its first Instance, which backend inputs it needs, which backend call runs them and how the
outputs become one result. ``JobLoop.run_kind`` streams the inputs of all jobs of one kind through the
backend, longest first, and hands the rows of each job to a ``Sink`` the moment its last output arrives;
``JobLoop.run`` does that for each kind in turn. The single-process run (executor/run.py) and every Ray
worker (executor/pool/worker.py) run this same loop; only their sinks differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lmeval.executor import budgets
from lmeval.executor.answercheck import AnswerProblem, checked_answers, gen_problem, score_problem
from lmeval.executor.answerkey import request_part
from lmeval.executor.backends import Backend, RequestFailed
from lmeval.executor.efficiency import distinct_positions
from lmeval.executor.instances import instance_columns
from lmeval.executor.media import with_images
from lmeval.executor.modelconf import ModelSpec
from lmeval.executor.requests import (
    JobResult,
    gen_job,
    gen_result,
    score_job,
    score_result,
    token_rule,
)
from lmeval.plans import InstanceRecord, TokenRule

# counters a backend may keep in ``cache_stats``
CACHE_STATS = ("cached_prompt_tokens", "rescored", "computed_tokens")


@dataclass
class RunStats:
    planned: int = 0
    resumed: int = 0
    reused: int = 0
    stored: int = 0  # instances answered from the result store (executor/answerstore.py)
    store_writes: int = 0  # answers this run added to the result store
    executed: int = 0  # instances whose results were computed in this run
    requests: int = 0  # distinct requests sent to the backend
    load_ms: int = 0  # backend start (model load, engine start)
    scoring_ms: int = 0
    generation_ms: int = 0
    cached_prompt_tokens: int = 0  # scoring prompt tokens read from the prefix cache (vllm backend)
    rescored: int = 0  # scoring requests whose cache hit reached their continuation, scored again without it
    truncated: int = 0  # Instances left-truncated to fit max_model_len (pre-flight's count, as lm-eval does)
    # the limit and the work (executor/efficiency.py): distinct token positions of the requests sent (shared
    # prefixes once) plus generated tokens; tokens the backend computed (0: a backend that does not count)
    distinct_tokens: int = 0
    computed_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class Sink(Protocol):
    """Where the loop puts result rows: ``add`` each job's rows (with the tokens it processed), ``flush``
    at the end of each kind."""

    def add(self, rows: Sequence[dict[str, Any]], tokens: int) -> None: ...

    def flush(self) -> None: ...


@dataclass(frozen=True)
class RequestKind:
    """How one kind of request runs; ``phase`` names it on the progress bar, ``stat`` is its time in
    ``RunStats``."""

    phase: str
    stat: str
    request_types: frozenset[str]
    build: Callable[[InstanceRecord, Backend, ModelSpec, TokenRule, str], Any]  # -> a job with .key, .size
    inputs: Callable[[Any], Sequence[Any]]  # a job's backend inputs (none: answered without the backend)
    run: Callable[[Backend, list[Any]], Iterator[tuple[int, Any]]]  # (input index, output) as they finish
    result: Callable[[Any, list[Any], Backend], JobResult]  # a job and its outputs, in input order
    generated: Callable[[Any], int]  # tokens an output generated (the limit counts each once)
    problem: AnswerProblem  # (input, output) -> what is wrong with the backend's answer (executor/answercheck.py)


SCORING = RequestKind(
    phase="scoring",
    stat="scoring_ms",
    request_types=frozenset({"loglikelihood", "loglikelihood_rolling"}),
    build=lambda inst, backend, spec, rule, instance_where: score_job(
        inst, backend.tokenizer, rule, backend.max_length, instance_where
    ),  # fmt: skip
    inputs=lambda job: job.windows,
    run=lambda backend, inputs: backend.score(inputs),
    result=lambda job, outs, backend: score_result(job, outs),
    generated=lambda out: 0,
    problem=score_problem,
)
GENERATION = RequestKind(
    phase="generating",
    stat="generation_ms",
    request_types=frozenset({"generate_until"}),
    build=lambda inst, backend, spec, rule, instance_where: gen_job(
        inst, backend.tokenizer, rule, backend.max_length, spec.max_gen_toks, instance_where, spec.reasoning
    ),  # fmt: skip
    inputs=lambda job: [job.input],
    run=lambda backend, inputs: budgets.generate(backend, inputs),  # two phases under a thinking budget
    result=lambda job, outs, backend: gen_result(job, outs[0], backend.tokenizer),
    generated=lambda out: sum(len(s.token_ids or ()) for s in out.samples),
    problem=gen_problem,
)
KINDS = (SCORING, GENERATION)  # the order a run takes them in


def result_row(inst: InstanceRecord, res: JobResult) -> dict[str, Any]:
    responses = res.responses
    return {
        **instance_columns(inst),
        "loglikelihood": res.loglikelihood,
        "is_greedy": res.is_greedy,
        "n_continuation_tokens": res.n_continuation_tokens,
        "response": responses[0] if responses else None,
        "responses": responses,
        "finish_reason": res.finish_reason,
        "reasoning_tokens": res.reasoning_tokens,
        "thinking_forced": res.thinking_forced,
        "source": "computed",
    }


def group(instances: Sequence[InstanceRecord], engine_seed: int) -> dict[str, list[InstanceRecord]]:
    """Instances by the request part of their answer key (``answerkey.request_part``): equal requests are run
    once; the same request hash asked with another number of repeats is another request."""
    groups: dict[str, list[InstanceRecord]] = {}
    for inst in instances:
        groups.setdefault(request_part(inst, engine_seed), []).append(inst)
    return groups


def instance_where(plan_path: str, inst: InstanceRecord) -> str:
    return f"{plan_path}: task {inst.task} doc {inst.doc_id} instance {inst.instance_id}"


@dataclass
class JobLoop:
    """The loop of one backend: its rows go to ``sink``, its counts and times to ``stats``."""

    backend: Backend
    spec: ModelSpec
    plan_path: str
    sink: Sink
    stats: RunStats

    def run(self, instances: Sequence[InstanceRecord], phase: Callable[[str], None] = lambda name: None) -> None:
        """Every kind of request in ``instances``, in ``KINDS`` order (``phase`` hears each kind's name); adds
        each kind's time and the backend's cache counters of this call to ``stats``."""
        cache0 = dict(getattr(self.backend, "cache_stats", None) or {})
        for kind in KINDS:
            mine = [i for i in instances if i.request_type in kind.request_types]
            if not mine:
                continue
            phase(kind.phase)
            t = time.monotonic()
            self.run_kind(kind, mine)
            setattr(self.stats, kind.stat, getattr(self.stats, kind.stat) + ms_since(t))
        cache1 = getattr(self.backend, "cache_stats", None) or {}
        for k in CACHE_STATS:
            setattr(self.stats, k, getattr(self.stats, k) + int(cache1.get(k, 0)) - int(cache0.get(k, 0)))

    def run_kind(self, kind: RequestKind, instances: Sequence[InstanceRecord]) -> None:
        """Run ``instances`` (all of ``kind``) through the backend; each job's rows go to the sink as soon as
        its last output is in."""
        backend, spec, stats, sink = self.backend, self.spec, self.stats, self.sink
        groups = group(instances, spec.seed)
        rule = token_rule(spec.token_rule, spec.add_bos_token, spec.prefix_token_id, backend.tokenizer)
        built = []
        for part, members in groups.items():
            job = kind.build(members[0], backend, spec, rule, instance_where(self.plan_path, members[0]))
            if members[0].media:
                job = with_images(job, self.plan_path, members[0])
            job.key = members[0].request_hash or f"instance:{members[0].instance_id}"
            built.append((job, part))
        built.sort(key=lambda jp: (-jp[0].size, jp[0].key, jp[1]))
        jobs = [job for job, _ in built]
        parts = [part for _, part in built]
        inputs: list[Any] = []
        owner: list[tuple[int, int]] = []  # input index -> (job, position among the job's inputs)
        outs: list[list[Any]] = []
        for j, job in enumerate(jobs):
            mine = kind.inputs(job)
            for w, x in enumerate(mine):
                inputs.append(x)
                owner.append((j, w))
            outs.append([None] * len(mine))
        left = [len(o) for o in outs]
        stats.requests += len(jobs)

        def finish(j: int) -> None:
            job = jobs[j]
            res = kind.result(job, outs[j], backend)
            members = groups[parts[j]]
            stats.executed += len(members)
            sink.add([result_row(m, res) for m in members], res.tokens)

        def where(i: int) -> str:  # the Instance of input ``i``
            return instance_where(self.plan_path, groups[parts[owner[i][0]]][0])

        for j, n in enumerate(left):
            if n == 0:  # a rolling request with no tokens
                finish(j)
        generated = 0
        try:
            answers = checked_answers(spec.backend, lambda: kind.run(backend, inputs), inputs, kind.problem, where)
            for i, out in answers:
                j, w = owner[i]
                outs[j][w] = out
                generated += kind.generated(out)
                left[j] -= 1
                if left[j] == 0:
                    finish(j)
        except RequestFailed as e:  # an HTTP backend's request that failed for good: name its Instance
            named = next((groups[p] for j, p in enumerate(parts) if jobs[j].key == e.key), None)
            if named:
                raise RequestFailed(f"{instance_where(self.plan_path, named[0])}: {e}", e.key) from None
            raise
        stats.distinct_tokens += distinct_positions([x.ids for x in inputs]) + generated
        sink.flush()


def ms_since(t: float) -> int:
    return int(round((time.monotonic() - t) * 1000))
