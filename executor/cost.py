"""What a plan will cost before it runs: per task, the distinct requests, their prompt tokens (the plan's
token ids) and the most tokens they may generate (``max_gen_toks`` x repeats), priced when per-token prices
are given. Requests are counted once, as ``execute`` and ``export-batch`` send them (equal request hashes
share one request, counted under the first task that asks it). Rolling log-likelihoods count their tokens
once; the windows an engine scores them in may repeat some context."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lmeval.executor.requests import max_tokens_of
from lmeval.plans import InstanceRecord, PlanHeader


@dataclass
class TaskCost:
    task: str
    requests: int = 0
    prompt_tokens: int = 0
    max_gen_tokens: int = 0
    without_ids: int = 0  # requests the plan holds no token ids for (not counted in prompt_tokens)

    def price(self, price_in: float, price_out: float) -> float:
        """US dollars (or whatever the prices are in) at ``price_in``/``price_out`` per million tokens."""
        return (self.prompt_tokens * price_in + self.max_gen_tokens * price_out) / 1e6


def default_max_gen_toks(header: PlanHeader) -> int:
    """The model config's ``max_gen_toks`` (what a generation without its own gets; 256 as ``execute``)."""
    model = header.config.get("model") if isinstance(header.config, dict) else None
    value = model.get("max_gen_toks") if isinstance(model, dict) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 256


def plan_cost(header: PlanHeader, instances: Iterable[InstanceRecord]) -> list[TaskCost]:
    """One ``TaskCost`` per task of the plan, in the header's order."""
    costs = {t.name: TaskCost(t.name) for t in header.tasks}
    default_max = default_max_gen_toks(header)
    seen: set[str] = set()
    for inst in instances:
        key = inst.request_hash or f"instance:{inst.instance_id}"
        if key in seen:
            continue
        seen.add(key)
        c = costs.setdefault(inst.task, TaskCost(inst.task))
        c.requests += 1
        if inst.context_ids is None:
            c.without_ids += 1
        else:
            c.prompt_tokens += len(inst.context_ids) + len(inst.continuation_ids or [])
        if inst.request_type == "generate_until":
            c.max_gen_tokens += max_tokens_of(inst.generation_kwargs, default_max) * max(inst.repeats, 1)
    return list(costs.values())


def total(costs: list[TaskCost]) -> TaskCost:
    t = TaskCost("total")
    for c in costs:
        t.requests += c.requests
        t.prompt_tokens += c.prompt_tokens
        t.max_gen_tokens += c.max_gen_tokens
        t.without_ids += c.without_ids
    return t


def cost_lines(costs: list[TaskCost], price_in: float | None, price_out: float | None) -> list[str]:
    """The table ``lmeval show --cost`` prints."""
    priced = price_in is not None or price_out is not None
    pin, pout = price_in or 0.0, price_out or 0.0
    width = max([len(c.task) for c in costs] + [5])
    head = f"{'task':<{width}}  {'requests':>9}  {'prompt_tokens':>13}  {'max_gen_tokens':>14}"
    lines = [head + (f"  {'price':>10}" if priced else "")]
    for c in [*costs, total(costs)]:
        line = f"{c.task:<{width}}  {c.requests:>9}  {c.prompt_tokens:>13}  {c.max_gen_tokens:>14}"
        if priced:
            line += f"  {c.price(pin, pout):>10.4f}"
        if c.without_ids:
            line += f"  ({c.without_ids} requests without token ids, not counted)"
        lines.append(line)
    if priced:
        lines.append(f"prices per million tokens: {pin:g} in, {pout:g} out (generation at its maximum length)")
    return lines
