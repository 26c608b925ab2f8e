"""``trust_remote_code`` comes only from the executing user, never from a plan (issue #13's model part)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lmeval.executor.modelconf import model_spec, resolve_model_config
from lmeval.plans.plan import ModelInfo, PlanHeader
from tests.executor.conftest import run_cli


def _header(model: dict) -> PlanHeader:  # type: ignore[type-arg]
    return PlanHeader(config={"model": model}, model=ModelInfo(name="m"), tasks=[])


def test_a_plan_cannot_turn_on_code_loading() -> None:
    header = _header(
        {
            "name": "m",
            "path": None,
            "trust_remote_code": True,
            "engine": {"trust_remote_code": True, "worker_extension_cls": "evil.Ext", "max_num_seqs": 4},
        }
    )
    cfg = resolve_model_config(header, [])
    spec = model_spec(cfg)
    assert spec.trust_remote_code is False and "trust_remote_code" not in cfg
    assert spec.engine == {"max_num_seqs": 4}  # other engine settings from the plan still apply
    assert model_spec(resolve_model_config(header, ["model.trust_remote_code=true"])).trust_remote_code is True
    assert model_spec(resolve_model_config(header, ["+model.engine.trust_remote_code=true"])).trust_remote_code


EVIL = """
import pathlib
pathlib.Path(MARKER).write_text("remote code ran")
from transformers import LlamaConfig as EvilConfig, LlamaForCausalLM as EvilModel

class EvilConfig(EvilConfig):  # type: ignore[misc,valid-type]
    model_type = "evil"


class EvilModel(EvilModel):  # type: ignore[misc,valid-type]
    config_class = EvilConfig
"""


def test_execute_never_imports_model_code_the_plan_trusts(tiny_model: Path, tmp_path: Path) -> None:
    """A model folder whose config maps to its own Python, compiled with ``model.trust_remote_code=true``:
    ``lmeval execute PLAN`` (hf backend) refuses in one line and imports nothing; the executing user's own
    ``model.trust_remote_code=true`` does import it (so this test can fail)."""
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    model.chmod(0o755)
    for f in model.iterdir():
        f.chmod(0o644)
    cfg = json.loads((model / "config.json").read_text())
    cfg["model_type"] = "evil"  # not a transformers architecture: only the folder's code can load it
    cfg["auto_map"] = {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"}
    (model / "config.json").write_text(json.dumps(cfg))
    marker = tmp_path / "IMPORTED"
    (model / "evil.py").write_text(EVIL.replace("MARKER", repr(str(marker))))
    plan = tmp_path / "p.msgpack"
    r = run_cli("compile", "+task=arith", "run.limit=2", f"model.path={model}", "model.trust_remote_code=true",
                f"run.out={plan}", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    # plans hold no machine paths: the executing user names the model folder, but not trust
    r = run_cli("execute", str(plan), "model.backend=hf", f"model.path={model}", "--out", str(tmp_path / "r"),
                cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "trust_remote_code" in r.stderr
    assert not marker.exists()
    modules = {"HF_MODULES_CACHE": str(tmp_path / "mods")}
    r = run_cli("execute", str(plan), "model.backend=hf", f"model.path={model}", "model.trust_remote_code=true",
                "--out", str(tmp_path / "r2"), cwd=tmp_path, env=modules)  # fmt: skip
    assert marker.exists(), r.stderr


def test_lmeval_run_passes_on_only_its_own_users_setting(tmp_path: Path) -> None:
    """``lmeval run`` compiles from this user's settings, so execute gets their ``trust_remote_code``."""
    from lmeval import compiler
    from lmeval.compiler.config import execute_model_overrides
    from lmeval.plans.plan import read_header

    for flag, want in (([], []), (["model.trust_remote_code=true"], ["model.trust_remote_code=true"])):
        plan = compiler.compile_to_file(
            ["+task=arith", "run.limit=1", *flag], out=str(tmp_path / f"p{len(flag)}.msgpack")
        )
        assert execute_model_overrides([], read_header(plan).config) == want
