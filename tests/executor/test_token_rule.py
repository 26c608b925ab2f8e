"""The executor's side of the encoding rule and the CPU engine setting for seeded sampling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lmeval.executor.engineconf import Platform, UserSettings, derive_engine_args, model_facts
from lmeval.executor.errors import ExecuteError
from lmeval.executor.modelconf import check_token_rule, model_spec
from lmeval.executor.requests import is_sampled, token_rule
from lmeval.plans.plan import ModelInfo, PlanHeader, TokenRule


def test_model_config_add_bos_token_and_prefix_token_id() -> None:
    assert model_spec({"backend": "fake"}).add_bos_token is None  # unset stays unset (not false)
    assert model_spec({"backend": "fake", "add_bos_token": False}).add_bos_token is False
    assert model_spec({"backend": "fake", "prefix_token_id": 3}).prefix_token_id == 3
    with pytest.raises(ExecuteError, match="add_bos_token='yes'"):
        model_spec({"backend": "fake", "add_bos_token": "yes"})
    with pytest.raises(ExecuteError, match="prefix_token_id=-1"):
        model_spec({"backend": "fake", "prefix_token_id": -1})


def test_execute_uses_the_plans_rule_and_refuses_contradicting_overrides() -> None:
    rule = TokenRule(add_bos_token=None, prefix_token_id=0, prefix_token_source="bos", prefix_text="<s>")
    header = PlanHeader(config={}, model=ModelInfo(name="m", add_bos_token=None, token_rule=rule), tasks=[])
    spec = check_token_rule(header, model_spec({"backend": "fake"}), "p.msgpack")
    assert spec.token_rule == rule
    assert token_rule(spec.token_rule, spec.add_bos_token, spec.prefix_token_id, None) == rule
    with pytest.raises(ExecuteError, match=r"model.add_bos_token=false but the plan's token ids were compiled "
                                           r"with add_bos_token=null; recompile"):  # fmt: skip
        check_token_rule(header, model_spec({"backend": "fake", "add_bos_token": False}), "p.msgpack")
    with pytest.raises(ExecuteError, match="model.prefix_token_id=5"):
        check_token_rule(header, model_spec({"backend": "fake", "prefix_token_id": 5}), "p.msgpack")
    # plans from before the rule was recorded: the model config's rule with the backend's tokenizer
    old = PlanHeader(config={}, model=ModelInfo(name="m"), tasks=[])
    assert check_token_rule(old, model_spec({"backend": "fake"}), "p").token_rule is None


def test_seeded_sampling_turns_chunked_prefill_off_on_cpu_only(tiny_model: Path) -> None:
    facts = model_facts(tiny_model)

    def args(kind: str, n: int, **user: Any) -> dict[str, Any]:
        return derive_engine_args(str(tiny_model), facts, Platform(kind, n), UserSettings(**user), None, {})

    assert "enable_chunked_prefill" not in args("cpu", 0)
    assert args("cpu", 0, seeded_sampling=True)["enable_chunked_prefill"] is False
    assert "enable_chunked_prefill" not in args("cuda", 1, seeded_sampling=True)
    given = {"enable_chunked_prefill": True}  # the user's own setting wins
    assert args("cpu", 0, seeded_sampling=True, engine=given)["enable_chunked_prefill"] is True


def test_is_sampled_agrees_with_gen_params() -> None:
    from lmeval.executor.requests import gen_params

    for kw in [None, {}, {"temperature": 0}, {"temperature": 0.7}, {"do_sample": True, "temperature": 1.0},
               {"do_sample": False, "temperature": 0.7}, {"temperature": None}]:  # fmt: skip
        params, _ = gen_params(kw, None, 16, 4, "0" * 64, "x")
        assert is_sampled(kw) == (not params.greedy), kw
        assert (params.seed is not None) == is_sampled(kw)


def test_cli_execute_refuses_a_contradicting_token_rule(tmp_path: Path) -> None:
    """The same rule through ``lmeval execute PLAN model.add_bos_token=...`` (the wiring, not only the helper):
    one line naming the override and the plan's value, exit 2, nothing written; agreeing overrides run."""
    from tests.executor.conftest import run_cli

    plans = {}
    for bos in ("null", "true"):
        plans[bos] = tmp_path / f"bos-{bos}.msgpack"
        extra = [] if bos == "null" else [f"model.add_bos_token={bos}"]
        r = run_cli("compile", "+task=arith", "run.limit=3", *extra, f"--out={plans[bos]}")
        assert r.returncode == 0, r.stderr
    refused = [
        ("null", "model.add_bos_token=true", "model.add_bos_token=true but the plan's token ids were compiled with "
                                             "add_bos_token=null; recompile the plan with model.add_bos_token=true"),
        ("null", "model.add_bos_token=false", "model.add_bos_token=false but the plan's token ids were compiled "
                                              "with add_bos_token=null"),
        ("true", "model.add_bos_token=false", "model.add_bos_token=false but the plan's token ids were compiled "
                                              "with add_bos_token=true"),
        ("null", "model.prefix_token_id=5", "model.prefix_token_id=5 but the plan's token ids were compiled with "
                                            "prefix_token_id=null"),
    ]  # fmt: skip
    for i, (bos, override, msg) in enumerate(refused):
        out = tmp_path / f"refused-{i}"
        r = run_cli("execute", str(plans[bos]), "model.backend=fake", override, "--out", str(out), "--no-progress")
        assert r.returncode == 2, (override, r.returncode, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lmeval execute: error: ") and "Traceback" not in r.stderr
        assert str(plans[bos]) in lines[0] and msg in lines[0], lines[0]
        assert not out.exists()
    for i, (bos, extra) in enumerate((("null", []), ("true", []), ("true", ["model.add_bos_token=true"]))):
        out = tmp_path / f"ran-{i}"
        r = run_cli("execute", str(plans[bos]), "model.backend=fake", *extra, "--out", str(out), "--no-progress")
        assert r.returncode == 0, (bos, extra, r.stderr)
        assert (out / "manifest.json").is_file()
