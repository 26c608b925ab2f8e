"""Scores equal lm-eval's on a Llama-style model: ``lmeval run`` vs ``lm_eval --model hf`` (0.4.13).

The checkpoint (tests/bos_model.py) is the tiny model with a tokenizer whose post-processor prepends
``<s>``, as Llama tokenizers do. Both sides read the same task YAMLs (tests/e2e/bos_ref.py): multiple
choice, loglikelihood with a perplexity metric, loglikelihood of an empty context (the prefix token),
loglikelihood_rolling (word/byte perplexity, bits per byte), a ``process_results`` task (``lmeval run
--trust-code``) and generate_until with regex filters; the first ``LIMIT`` documents, once with
``add_bos_token`` unset (the tokenizer's default: BOS) and once with ``add_bos_token=false`` on both sides.
Our side runs the hf backend (batch size 1, as lm-eval's): per Instance, log-likelihoods agree within the
stated bound against lm-eval (``tests/bounds.py``: ``VS_LM_EVAL``) and generations are equal; every metric is
equal to ``SCORES`` except the functions of log-likelihoods (perplexity, word/byte perplexity, bits per byte,
the perplexity's bootstrap stderr), which agree within the tolerance their formula carries from that bound,
computed from lm-eval's own log-likelihoods (``bounds.perplexity_tolerance`` and its siblings);
``test_perplexity_check_bites`` shows the same check refuses our log-likelihoods shifted by 10 bounds. It also
runs once on the default vLLM backend (add_bos_token unset) with AVX2 kernels forced (``tests/kernelpath``: on
an AVX-512 machine the other kernel kind, so the bound is met by both kinds on one machine): log-likelihoods
within the bound, generations and accuracies equal, perplexities within their derived tolerances.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmeval.plans.plan import read_header
from tests.bos_model import build_bos_model
from tests.bounds import SCORES, VS_LM_EVAL
from tests.e2e import bos_ref
from tests.e2e.background import in_background
from tests.e2e.compare import derived_tolerance, ref_lls
from tests.e2e.ours import AVX2_ENV

pytestmark = pytest.mark.lmeval_parity

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("LMEVAL_DATA_DIR", REPO.parent / "shared" / "data"))
LIMIT = 4
SETTINGS: dict[str, bool | None] = {"unset": None, "false": False}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("bos-e2e")
    model = build_bos_model(work / "llama-style")
    tasks = bos_ref.write_tasks(work / "tasks", DATA)
    # lm-eval's side runs beside ours (tests/e2e/background.py): the same results, one wait instead of two
    ref_job = in_background(bos_ref.reference, model, work / "tasks", tasks, LIMIT, SETTINGS)
    ours = {name: _lmeval_run(work, model, tasks, name, add_bos) for name, add_bos in SETTINGS.items()}
    ref = ref_job.result()
    return {"work": work, "model": model, "tasks": tasks, "ref": ref, "ours": ours}


def _lmeval_run(
    work: Path, model: Path, tasks: list[str], name: str, add_bos: bool | None, backend: str = "hf", avx2: bool = False
) -> Path:
    out, plan = work / f"results-{name}", work / f"plan-{name}.msgpack"
    args = [f"run.include_path={work / 'tasks'}", f"run.tasks=[{','.join(tasks)}]", f"run.limit={LIMIT}",
            f"model.path={model}", "model.name=llama-style", f"model.backend={backend}"]  # fmt: skip
    if backend == "hf":
        args.append("model.batch_size=1")  # lm-eval's --batch_size 1
    if add_bos is not None:
        args.append(f"model.add_bos_token={str(add_bos).lower()}")
    cmd = [sys.executable, "-m", "lmeval", "run", *args, "--trust-code", "--out", str(out), "--plan-out", str(plan),
           "--no-progress"]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO))
    if avx2:  # every process of the run computes as an AVX2-only CPU (tests/kernelpath/sitecustomize.py)
        env.update(AVX2_ENV)
    env.pop("LMEVAL_TRUST_CODE", None)
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert Path(proc.stdout.strip().splitlines()[-1]) == out
    return out


def _our_rows(out: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    from lmeval.plans.results import read_results

    return {(r["task"], r["doc_id"], r["idx"]): r for r in read_results(out).iter_rows(named=True)}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_plan_records_the_rule(setup: dict[str, Any], name: str) -> None:
    header = read_header(setup["work"] / f"plan-{name}.msgpack")
    rule = header.model.token_rule
    assert rule is not None
    assert rule.add_bos_token is SETTINGS[name]
    assert rule.special_prefix == ([0] if SETTINGS[name] is None else [])
    assert (rule.prefix_token_id, rule.prefix_token_source, rule.prefix_text) == (0, "bos", "<s>")


@pytest.fixture(scope="module")
def vllm_out(setup: dict[str, Any]) -> Path:
    """The default backend (vLLM, CPU) with add_bos_token unset, AVX2 kernels forced."""
    return _lmeval_run(setup["work"], setup["model"], setup["tasks"], "vllm", None, backend="vllm", avx2=True)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_loglikelihoods_and_generations_equal(setup: dict[str, Any], name: str) -> None:
    _check_instances(setup, _our_rows(setup["ours"][name]), setup["ref"][name]["samples"])


@pytest.mark.vllm
def test_vllm_backend_loglikelihoods_and_generations_equal(setup: dict[str, Any], vllm_out: Path) -> None:
    """``lmeval run`` as a user runs it (vLLM) on the same checkpoint, against lm-eval's hf results."""
    _check_instances(setup, _our_rows(vllm_out), setup["ref"]["unset"]["samples"])
    ours = json.loads((vllm_out / "results.json").read_text())["results"]
    ref = setup["ref"]["unset"]
    for task, key in [("bos_piqa", "acc,none"), ("bos_gsm8k", "exact_match,flexible-extract")]:
        assert ours[task][key] == ref["results"][task][key], (task, key)
    for task, key in [("bos_rolling", "word_perplexity,none"), ("bos_lastword", "perplexity,none")]:
        tol = derived_tolerance(key, ref["samples"][task])
        assert tol.close(ours[task][key], ref["results"][task][key]), (task, key, tol)


def _check_instances(setup: dict[str, Any], ours: dict[tuple[str, int, int], dict[str, Any]], ref: dict) -> None:
    n_ll = n_gen = 0
    for task in setup["tasks"]:
        seen: set[int] = set()
        for s in ref[task]:
            if s["doc_id"] in seen:  # one logged sample per filter
                continue
            seen.add(s["doc_id"])
            if task == "bos_gsm8k":
                assert ours[(task, s["doc_id"], 0)]["response"] == s["resps"][0][0], (task, s["doc_id"])
                n_gen += 1
                continue
            for idx, ll in enumerate(ref_lls(s)):
                mine = ours[(task, s["doc_id"], idx)]["loglikelihood"]
                assert VS_LM_EVAL.close(mine, ll), (task, s["doc_id"], idx, mine, ll)
                n_ll += 1
        assert len(seen) == LIMIT, task
    assert n_gen == LIMIT and n_ll >= LIMIT * 5


def metric_mismatches(ours: dict[str, Any], ref: dict[str, Any], tasks: list[str]) -> tuple[list[tuple], int]:
    """Every metric of lm-eval's results (``ref``: its results and samples) that ours misses or that lies
    outside its ``metric_tolerance``, and the number compared."""
    out, compared = [], 0
    for task in tasks:
        for key, want in ref["results"][task].items():
            if key in ("alias", " ") or not isinstance(want, (int, float)):
                continue
            got = ours[task].get(key)
            tol = derived_tolerance(key, ref["samples"][task])
            if not isinstance(got, (int, float)) or not tol.close(got, want):
                out.append((task, key, got, want, tol))
            compared += 1
    return out, compared


@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_metric_equal(setup: dict[str, Any], name: str) -> None:
    ours = json.loads((setup["ours"][name] / "results.json").read_text())["results"]
    ref = setup["ref"][name]["results"]
    wrong, compared = metric_mismatches(ours, setup["ref"][name], setup["tasks"])
    assert wrong == []
    assert compared >= 20
    for task, keys in [("bos_rolling", ("word_perplexity,none", "byte_perplexity,none", "bits_per_byte,none")),
                       ("bos_rolling_pr", ("word_perplexity,none", "bits_per_byte,none")),
                       ("bos_lastword", ("perplexity,none", "perplexity_stderr,none", "acc,none")),
                       ("bos_uncond", ("acc,none",)), ("bos_piqa", ("acc,none", "acc_norm,none")),
                       ("bos_gsm8k", ("exact_match,strict-match", "exact_match,flexible-extract"))]:  # fmt: skip
        for k in keys:
            assert k in ref[task] and k in ours[task], (task, k)


@pytest.mark.parametrize("bounds", [10.0, -10.0])
def test_perplexity_check_bites(setup: dict[str, Any], bounds: float) -> None:
    """Planted: our log-likelihoods of the perplexity task shifted by ``bounds`` times the per-request bound
    give a perplexity (lm-eval's formula, ``exp(-mean ll)``) that the check of ``test_every_metric_equal``
    refuses; half a bound, the check accepts (the tolerance is not looser than its derivation)."""
    task, key = "bos_lastword", "perplexity,none"
    ref = setup["ref"]["unset"]
    ours = json.loads((setup["ours"]["unset"] / "results.json").read_text())["results"]
    rows = _our_rows(setup["ours"]["unset"])
    mine = [rows[(task, s["doc_id"], 0)]["loglikelihood"] for s in ref["samples"][task]]
    theirs = [ref_lls(s)[0] for s in ref["samples"][task]]
    assert len(mine) == LIMIT and math.isclose(math.exp(-sum(mine) / LIMIT), ours[task][key], rel_tol=SCORES.rtol)
    for factor, refused in ((bounds, True), (bounds / 20, False)):
        shifted = [x + factor * VS_LM_EVAL.bound(r) for x, r in zip(mine, theirs, strict=True)]
        planted = {t: dict(v) for t, v in ours.items()}
        planted[task][key] = math.exp(-sum(shifted) / LIMIT)
        wrong, _ = metric_mismatches(planted, ref, setup["tasks"])
        assert [(t, k) for t, k, *_ in wrong] == ([(task, key)] if refused else []), (factor, wrong)


def test_bos_changes_the_numbers(setup: dict[str, Any]) -> None:
    """Not vacuous: unset, every prompt starts with BOS exactly once; false, none does (an empty context
    still becomes the prefix token); and the log-likelihoods differ between the two."""
    for name, bos in SETTINGS.items():
        for task, context, ids in _plan_rows(setup["work"] / f"plan-{name}.msgpack"):
            if task == "bos_uncond":  # empty context: the prefix token (BOS) either way
                assert context == "" and ids == [0]
            elif bos is None:
                assert ids[0] == 0 and ids[1] != 0, (task, ids[:3])
            else:
                assert ids[0] != 0, (task, ids[:3])
    a, b = (_our_rows(setup["ours"][n]) for n in SETTINGS)
    diffs = [abs(a[k]["loglikelihood"] - b[k]["loglikelihood"]) for k in a if a[k]["loglikelihood"] is not None]
    assert max(diffs) > 0.1


def _plan_rows(plan: Path) -> list[tuple[str, str, list[int]]]:
    from lmeval.plans.plan import InstanceRecord, PlanReader

    with PlanReader(plan) as r:
        return [(x.task, x.context, list(x.context_ids or [])) for x in r if isinstance(x, InstanceRecord)]
