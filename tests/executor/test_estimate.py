"""The bill before the run (executor/estimate.py, executor/calibrate.py, ``lmeval show --estimate``, ``lmeval run
--dry-run``): token counts equal hand counts on a small plan of hand-made token ids, the calibration slice's
tokens/s arithmetic, the --tokens-per-s and pricing paths, the stored-answers seam, the manifest's estimate beside
what a (fake) run did, and a dry run that executes nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lmeval.executor.calibrate import SliceRun, rates_of
from lmeval.executor.estimate import BlockCache, Rates, TokenEstimate, estimate_tokens
from lmeval.plans import RunManifest
from lmeval.plans.plan import DocRecord, InstanceRecord, read_plan
from tests.bounds import ARITHMETIC
from tests.executor import plantools as pt
from tests.support import cli_in_process, instance_record

CTX = list(range(1, 11))  # ten context tokens: blocks [1-4] [5-8] and a partial [9, 10]
GEN = {"until": ["\n"], "do_sample": False, "max_gen_toks": 5}


def _ll(task: str, doc: int, idx: int, ctx: list[int], cont: list[int]) -> InstanceRecord:
    return instance_record(task, doc, idx, "loglikelihood", f"c{ctx}", f"k{cont}", None, (ctx, cont))


def hand_plan(path: Path) -> Path:
    """A: CTX + [20, 21]; B: CTX + [30, 31]; C (task copy) asks A again; G generates from CTX + [40, 41]."""
    a, b = _ll("hand", 0, 0, CTX, [20, 21]), _ll("hand", 0, 1, CTX, [30, 31])
    c = _ll("copy", 0, 0, CTX, [20, 21])
    g = instance_record("gen", 0, 0, "generate_until", "g", None, GEN, (CTX + [40, 41], None), repeats=2)
    tasks = [
        ("hand", "multiple_choice", [(DocRecord("hand", 0, {}, 0, ["x", "y"]), [a, b])]),
        ("copy", "multiple_choice", [(DocRecord("copy", 0, {}, 0, ["x"]), [c])]),
        ("gen", "generate_until", [(DocRecord("gen", 0, {}, "t"), [g])]),
    ]
    pt.build(path, tasks, model=pt.tiny_model_config(engine={"block_size": 4}))
    return path


def test_block_cache_hits_whole_blocks_and_never_the_last_token() -> None:
    cache = BlockCache(4)
    assert cache.compute(CTX) == 10  # nothing cached yet
    assert cache.compute(CTX[:8] + [99, 100]) == 2  # [1-4] [5-8] read
    assert cache.compute(CTX) == 2  # its own [9, 10] is partial: never cached
    assert cache.compute(CTX[:8]) == 4  # all 8 cached, but the last token is computed: one block read
    assert cache.compute(CTX, read=False) == 10


def test_token_counts_equal_hand_counts(tmp_path: Path) -> None:
    plan = read_plan(hand_plan(tmp_path / "p.msgpack"))
    est = estimate_tokens(plan.header, plan.instances, block_size=4)
    assert est.requests == 3  # C is A's request: run once
    assert est.stored == 0
    assert est.prompt_tokens == 12 + 12 + 12
    assert est.distinct_tokens == 12 + 2 + 2  # CTX once, then each request's own two tokens
    # A: 12 computed + 1 sampled; B reads [1-4] [5-8] (8 <= ctxlen - 1): 4 + 1; G reads the same two blocks: 4
    assert (est.scoring_tokens, est.gen_prompt_tokens, est.to_compute) == (13 + 5, 4, 22)
    assert (est.gen_requests, est.max_gen_tokens, est.stop_sequences) == (1, 5 * 2, ["\n"])


def test_a_hit_into_the_continuation_is_counted_twice_as_the_backend_rescores_it(tmp_path: Path) -> None:
    plan = tmp_path / "r.msgpack"
    ctx = CTX[:8]  # two whole blocks: the follower's hit (8) reaches past ctxlen - 1 (7)
    insts = [_ll("r", 0, 0, ctx, [60, 61]), _ll("r", 0, 1, ctx, [50, 51])]
    pt.build(plan, [("r", "multiple_choice", [(DocRecord("r", 0, {}, 0, ["x", "y"]), insts)])])
    p = read_plan(plan)
    est = estimate_tokens(p.header, p.instances, block_size=4)
    assert est.scoring_tokens == (10 + 1) + (2 + 1) + (10 + 1)


def test_stored_answers_are_not_computed(tmp_path: Path) -> None:
    plan = read_plan(hand_plan(tmp_path / "p.msgpack"))
    b = next(i for i in plan.instances if i.task == "hand" and i.idx == 1)
    asked: list[int] = []

    def lookup(insts: Any) -> set[str]:
        asked.append(len(insts))
        return {b.instance_id}

    est = estimate_tokens(plan.header, plan.instances, stored=lookup, block_size=4)
    assert asked == [3]  # one lookup, of the distinct requests
    assert (est.requests, est.stored, est.prompt_tokens, est.to_compute) == (3, 1, 24, 13 + 4)


def test_calibration_slice_rates_arithmetic() -> None:
    est = TokenEstimate(scoring_tokens=1000, gen_prompt_tokens=200)
    run = SliceRun(docs=2, estimate=est, computed_tokens=1000 + 200 + 300, generated_tokens=300,
                   scoring_ms=2000, generation_ms=1600)  # fmt: skip
    rates = rates_of(run)
    assert abs(rates.prefill_per_s - 500) < ARITHMETIC.atol  # 1000 tokens in 2 s
    assert rates.decode_per_s is not None and abs(rates.decode_per_s - 250) < ARITHMETIC.atol  # 300 in 1.6 - 0.4 s
    whole = TokenEstimate(scoring_tokens=10_000, max_gen_tokens=1000)
    assert abs(rates.seconds(whole) - (20 + 4)) < ARITHMETIC.atol
    assert abs(rates.seconds(whole, 0) - 20) < ARITHMETIC.atol
    gen_only = SliceRun(1, TokenEstimate(gen_prompt_tokens=100), 400, 300, 0, 2000)
    assert abs(rates_of(gen_only).prefill_per_s - 200) < ARITHMETIC.atol  # every computed token at one rate
    with pytest.raises(ValueError, match="computed nothing"):
        rates_of(SliceRun(1, TokenEstimate(), 0, 0, 0, 0))


def _lines(out: str) -> dict[str, str]:
    return {ln[:20].strip(): ln[20:] for ln in out.splitlines()[1:]}


def test_show_estimate_at_a_given_rate_and_priced(tmp_path: Path) -> None:
    plan = hand_plan(tmp_path / "p.msgpack")
    rc, out, err = cli_in_process("show", str(plan), "--estimate", "--tokens-per-s", "11")
    assert rc == 0, err
    got = _lines(out)
    assert got["requests"].startswith("3 (0 already stored, 3 to run)")
    assert got["tokens to compute"].startswith("22 (prefix cache in blocks of 4; 18 scoring, 4 generation")
    assert got["time"] == "2.0s at 11 tokens/s (given), up to 2.9s with at most 10 tokens generated"  # 22/11, 32/11
    rc, out, err = cli_in_process("show", str(plan), "--estimate", "--price-in", "1000", "--price-out", "10000")
    assert rc == 0, err
    # show --cost's pricing: 36 prompt tokens at 1000, 10 generated at 10000, per million
    assert _lines(out)["price"].startswith("0.1360 at 1000 in, 10000 out per million tokens (36 prompt tokens")
    assert "--tokens-per-s N" in _lines(out)["time"]  # no rate: says how to get one


@pytest.mark.parametrize("flag", [["--tokens-per-s", "0"], ["--tokens-per-s", "nan"], ["--slice-docs", "0"]])
def test_bad_rate_is_one_line(tmp_path: Path, flag: list[str]) -> None:
    plan = hand_plan(tmp_path / "p.msgpack")
    rc, out, err = cli_in_process("show", str(plan), "--estimate", *flag)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and flag[0] in err


def test_fake_run_records_the_estimate_beside_what_ran(tmp_path: Path) -> None:
    plan = hand_plan(tmp_path / "p.msgpack")
    from lmeval.plans.results import read_manifest

    rc, out, err = cli_in_process("execute", str(plan), "model.backend=fake", "--out", str(tmp_path / "r"),
                                  "--no-progress")  # fmt: skip
    assert rc == 0, err
    m = read_manifest(tmp_path / "r")
    assert m.estimate["requests"] == 3 and m.estimate["to_compute"] == 22 and m.estimate["max_gen_tokens"] == 10
    assert m.stats["requests"] == 3
    old = {k: v for k, v in m.to_dict().items() if k != "estimate"}  # a manifest written before the estimate
    assert RunManifest.from_dict(old).estimate == {}


def test_dry_run_compiles_estimates_and_executes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lmeval.executor

    def refuse(*a: Any, **k: Any) -> None:
        raise AssertionError("a dry run executed the plan")

    import lmeval.cli.estimate as cli_estimate

    seen: list[tuple[list[str], Any]] = []
    original = cli_estimate.stored_ids

    def lookup(path: str, header: Any, firsts: Any, overrides: Any, store: Any) -> Any:
        seen.append((list(overrides), store))
        return original(path, header, firsts, overrides, store)

    monkeypatch.setattr(cli_estimate, "stored_ids", lookup)
    monkeypatch.setattr(lmeval.executor, "execute", refuse)
    monkeypatch.chdir(tmp_path)
    plan = tmp_path / "a.msgpack"
    rc, out, err = cli_in_process("run", "+task=arith", "run.limit=3", "model.backend=fake", "run.store=off",
                                  "--plan-out", str(plan), "--dry-run", "--tokens-per-s", "100")  # fmt: skip
    assert rc == 0, err
    assert seen == [(["model.backend=fake"], "off")]  # the store is asked about the run's model and store
    got = _lines(out.split("\n", 1)[1])  # after the "plan: PATH" line
    p = read_plan(plan)
    est = estimate_tokens(p.header, p.instances)
    assert got["requests"].startswith(f"{est.requests} (0 already stored")
    assert got["tokens to compute"].startswith(f"{est.to_compute} ")
    assert est.requests > 0 and got["time"].startswith(f"{est.to_compute / 100:.1f}s at 100 tokens/s")
    assert not (tmp_path / "results").exists() and os.listdir(tmp_path) == ["a.msgpack"]


def test_rates_without_decode_use_the_prefill_rate() -> None:
    r = Rates(100.0)
    assert abs(r.seconds(TokenEstimate(scoring_tokens=300, max_gen_tokens=200)) - 5.0) < ARITHMETIC.atol


def test_report_puts_the_estimate_beside_the_run() -> None:
    from types import SimpleNamespace

    from lmeval.report.provenance import rows_for

    stats = {"requests": 160, "computed_tokens": 47691, "cached_prompt_tokens": 109312, "scoring_ms": 161110,
             "generation_ms": 0}  # fmt: skip
    manifest = {"plan_hash": "ab" * 32, "stats": stats,
                "estimate": {"to_compute": 47691, "requests": 160, "block_size": 32, "max_gen_tokens": 0}}  # fmt: skip
    run = SimpleNamespace(manifest=manifest, plan_hash="ab" * 32, plan=None, path="r", plan_path="p.msgpack",
                          results=SimpleNamespace(bootstrap_iters=None))  # fmt: skip
    rows = rows_for(run)  # type: ignore[arg-type]
    assert rows["estimate vs run"] == (
        "tokens to compute 47,691 (blocks of 32), computed 47,691; requests 160, sent 160; prefix-cache hits "
        "109,312 prompt tokens; engine time 161.1 s"
    )
    assert "other manifest fields" not in rows  # the estimate is a known field, not a leftover
    del manifest["estimate"]
    assert "estimate vs run" not in rows_for(run)  # type: ignore[arg-type]  # an older manifest: no row


def test_answers_in_the_result_store_are_counted_and_not_priced(tmp_path: Path) -> None:
    """The store's own lookup (``answered_ids``): after a fake run stored B's answer, the estimate on the same model
    and store counts B stored, does not compute it, does not price it; with the store off, nothing is stored."""
    plan = hand_plan(tmp_path / "p.msgpack")
    store = f"run.store={tmp_path / 'store'}"
    b = next(i for i in read_plan(plan).instances if i.task == "hand" and i.idx == 1)
    only_b = tmp_path / "b.msgpack"
    pt.build(only_b, [("hand", "multiple_choice", [(DocRecord("hand", 0, {}, 0, ["y"]), [b])])],
             model=pt.tiny_model_config(engine={"block_size": 4}))  # fmt: skip
    rc, out, err = cli_in_process("execute", str(only_b), "model.backend=fake", store, "--out", str(tmp_path / "r"),
                                  "--no-progress")  # fmt: skip
    assert rc == 0, err
    args = ("--tokens-per-s", "11", "--price-in", "1000", "--price-out", "10000")
    rc, out, err = cli_in_process("show", str(plan), "--estimate", "model.backend=fake", store, *args)
    assert rc == 0, err
    got = _lines(out)
    assert got["requests"].startswith("3 (1 already stored, 2 to run)")
    assert got["tokens to compute"].startswith("17 ")  # A: 13, G: 4 (B's 5 not computed)
    assert got["price"].startswith("0.1240 at")  # B's 12 prompt tokens not paid: (24 * 1000 + 10 * 10000) / 1e6
    rc, out, err = cli_in_process("show", str(plan), "--estimate", "model.backend=fake", "run.store=off", *args)
    assert rc == 0, err
    assert _lines(out)["requests"].startswith("3 (0 already stored, 3 to run)")


def test_calibration_slice_on_the_hf_backend_times_the_plan(tmp_path: Path) -> None:
    """A real slice (tiny model, hf backend): one warm-up document, then two timed; the time printed is the
    plan's tokens to compute at the slice's rate."""
    plan = tmp_path / "arc.msgpack"
    pt.build(plan, [pt.arc_easy(8)])
    rc, out, err = cli_in_process("show", str(plan), "--estimate", "model.backend=hf", "--slice-docs", "2")
    assert rc == 0, err
    got = _lines(out)
    to_compute = int(got["tokens to compute"].split()[0])
    secs, rate = got["time"].split("s at ")[0], got["time"].split("s at ")[1].split()[0]
    assert "(calibration slice of 2 documents)" in got["time"]
    assert abs(float(secs) - to_compute / float(rate)) <= 0.05 + to_compute / float(rate) * 0.01
    assert got["calibration"].startswith("2 documents, ")
