"""Pre-flight: the plan's requests against the model's context length, before any engine is started.

lm-eval's behaviour where a request is too long: a log-likelihood request keeps the last
``max_model_len - 1`` tokens of context + continuation (left truncation; ``requests.truncate_for_scoring``),
a generation keeps the last ``max_model_len - max_gen_toks`` context tokens
(``requests.truncate_for_generation``). Those are counted and reported in one line. What cannot run at all is a
one-line error naming task and doc: a continuation that does not fit the window with one token of context,
a ``max_gen_toks`` as large as the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lmeval.executor.errors import ExecuteError
from lmeval.executor.requests import gen_params
from lmeval.plans import InstanceRecord


@dataclass
class PreflightReport:
    max_model_len: int
    longest: int = 0  # tokens of the longest request (context + continuation, or context + max_gen_toks)
    scoring: int = 0  # loglikelihood Instances checked
    scoring_truncated: int = 0
    generation: int = 0
    generation_truncated: int = 0

    @property
    def truncated(self) -> int:
        return self.scoring_truncated + self.generation_truncated

    def line(self) -> str | None:
        """The one line to show, or None when nothing is truncated."""
        if not self.truncated:
            return None
        parts = []
        if self.scoring_truncated:
            parts.append(f"{self.scoring_truncated} of {self.scoring} loglikelihood Instances")
        if self.generation_truncated:
            parts.append(f"{self.generation_truncated} of {self.generation} generate_until Instances")
        return (
            f"pre-flight: {' and '.join(parts)} exceed max_model_len={self.max_model_len} (longest "
            f"{self.longest} tokens) and are left-truncated, as lm-eval does"
        )


def _where(plan_path: str, inst: InstanceRecord) -> str:
    return f"{plan_path}: task {inst.task} doc {inst.doc_id}"


def preflight(
    instances: Sequence[InstanceRecord], max_model_len: int, default_max_gen: int, plan_path: str
) -> PreflightReport:
    """Check every Instance that carries token ids against ``max_model_len``; raise on the first that
    cannot run, count those that are truncated."""
    rep = PreflightReport(max_model_len)
    for inst in instances:
        if inst.request_type == "loglikelihood":
            if inst.context_ids is None or inst.continuation_ids is None:
                continue
            n_ctx = max(len(inst.context_ids), 1)  # an empty context becomes the prefix token
            n_cont = len(inst.continuation_ids)
            rep.scoring += 1
            rep.longest = max(rep.longest, n_ctx + n_cont)
            if n_cont > max_model_len - 2:
                raise ExecuteError(
                    f"{_where(plan_path, inst)}: the continuation is {n_cont} tokens, more than "
                    f"max_model_len={max_model_len} leaves with one token of context"
                )
            if n_ctx + n_cont > max_model_len - 1:
                rep.scoring_truncated += 1
        elif inst.request_type == "loglikelihood_rolling":
            if max_model_len < 3:
                raise ExecuteError(f"{_where(plan_path, inst)}: max_model_len={max_model_len} is too small for "
                                   f"rolling log-likelihood windows")  # fmt: skip
        elif inst.request_type == "generate_until":
            if inst.context_ids is None:
                continue
            where = _where(plan_path, inst)
            kwargs = inst.generation_kwargs
            params, _ = gen_params(kwargs, None, default_max_gen, inst.repeats, inst.request_hash, where)
            rep.generation += 1
            rep.longest = max(rep.longest, len(inst.context_ids) + params.max_tokens)
            if params.max_tokens >= max_model_len:
                raise ExecuteError(
                    f"{where}: max_gen_toks={params.max_tokens} does not fit max_model_len={max_model_len} "
                    f"(no room left for the prompt)"
                )
            if len(inst.context_ids) + params.max_tokens > max_model_len:
                rep.generation_truncated += 1
    return rep
