"""Guard-removed demonstrations (#19 acceptance 1, #26): each one-line mutation breaks one guarantee; the test
named for that guarantee must go red. ``MUTATIONS`` is the table: the target file and the exact text of each
mutation are spelt out there (a renamed module only needs its path changed in this one place).

    PYTHONPATH=$PWD .venv/bin/python tests/mutants/run_mutants.py [--only NAME ...] [--no-baseline]

For each mutation: run its tests on the unchanged code (baseline, must pass), replace the exact text (a
line or part of one) in the source file (it must occur exactly once, else the mutation is reported as NOT
FOUND: the code moved), run the tests again, and put the file back byte for byte, whatever happens (``finally``; SIGINT
and SIGTERM run it too). Before touching a file its original bytes go to a journal in the temp dir; a
run killed outright leaves the journal behind, and the next run restores from it first.

Prints ``mutation | area | file | tests | baseline | mutated`` (the baseline runs once per distinct test set;
area is the docs section, with the #26 area number in brackets) where mutated is RED (pytest reported failures,
exit 1), GREEN (the tests still pass: the test does not guard the line) or ERROR (pytest could not run
them, exit >= 2). Exit status 0 only when every mutation is RED. Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[2]
JOURNAL = Path(tempfile.gettempdir()) / f"lmeval-mutants-{REPO.name}-journal.json"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repo root
    old: str  # exact text, must occur once
    new: str
    tests: tuple[str, ...]  # pytest node ids
    area: str = ""  # the docs section (and #26 area) whose guarantee the line carries


TS = "tests/compiler/test_target_strictness.py"
UB = "tests/scorer/test_unreached_branches.py"
PR = "tests/compiler/tasks/test_precedence.py"
CAT = "tests/compiler/tasks/test_catalog.py"
BR = "tests/report/test_browser.py"
CO = "tests/compiler/test_consent.py"
VR = "tests/plans/test_validate_refusals.py"  # every refusal of plans/plan/validate.py reached by its own plan
FG = "tests/compiler/formats/test_format_guards.py"  # #53: guards of one-line bugs of #38/#39
EG = "tests/scorer/test_estimate_guards.py"
RG = "tests/executor/test_request_guards.py"


MUTATIONS = [
    Mutation(
        "BOS: unset add_bos_token no longer follows the tokenizer (always off)",
        "plans/plan/tokenization.py",
        "    return True if add_bos_token is None else add_bos_token\n",
        "    return bool(add_bos_token)\n",
        ("tests/plans/test_tokenization.py", "tests/compiler/encode/test_bos_ids.py::test_ids_equal_hflm"),
        area="compile",
    ),
    Mutation(
        "BOS: a prompt that starts with <s> gets a second BOS",
        "plans/plan/tokenization.py",
        "    if prefix_text and text.startswith(prefix_text):\n        return False\n",
        "    if False:\n        return False\n",
        ("tests/compiler/encode/test_bos_ids.py::test_chat_templated_prompts_get_one_bos",),
        area="compile",
    ),
    Mutation(
        "regex: all-empty-groups fallback not stripped",
        "scorer/regex/ops.py",
        "            return fallback.strip()  # lm-eval strips the fallback in this one case\n",
        "            return fallback\n",
        ("tests/scorer/test_regex.py",),
        area="score",
    ),
    Mutation(
        "instance id: doc_id and idx swapped in the derivation",
        "plans/plan/records.py",
        '    return hashlib.sha256(f"{task}\\x00{doc_id}\\x00{idx}".encode()).hexdigest()[:16]\n',
        '    return hashlib.sha256(f"{task}\\x00{idx}\\x00{doc_id}".encode()).hexdigest()[:16]\n',
        ("tests/plans/test_io.py::test_instance_ids_and_shards_are_stable",),
        area="plan",
    ),
    Mutation(
        "request hash: generation_kwargs left out",
        "plans/plan/records.py",
        '        "generation_kwargs": None if generation_kwargs is None else normalize(generation_kwargs),\n',
        '        "generation_kwargs": None,\n',
        ("tests/compiler/test_determinism.py::test_request_hashes_follow_the_format_spec",),
        area="plan",
    ),
    Mutation(
        "compare: p-value without the sqrt(2)",
        "diff/runs.py",
        "        md.p = math.erfc(abs(md.z) / math.sqrt(2))\n",
        "        md.p = math.erfc(abs(md.z))\n",
        ("tests/scorer/test_errors.py::test_samples_parquet_and_compare",),
        area="score",
    ),
    Mutation(
        "diff: exit 0 when the plans differ",
        "lmeval/cli/diff.py",
        "    return 0 if report.identical else 1\n",
        "    return 0\n",
        ("tests/diff/test_diff_cli.py::test_differ_exit_1",),
        area="diff",
    ),
    Mutation(
        "sandbox: no throwaway uid (programs run as root)",
        "scorer/sandbox/run.py",
        "        uid = _next_uid() if iso.drop_uid else None\n",
        "        uid = None\n",
        ("tests/scorer/test_sandbox_isolation.py::test_runs_as_a_throwaway_uid_not_root",),
        area="sandbox",
    ),
    Mutation(
        "--reuse: another tokenizer accepted",
        "executor/modelconf.py",
        'REUSE_KEYS = ("name", "path", "backend", "dtype", "max_model_len", "add_bos_token", "tokenizer_hash", '
        '"config_hash")\n',
        'REUSE_KEYS = ("name", "path", "backend", "dtype", "max_model_len", "add_bos_token", "config_hash")\n',
        ("tests/executor/test_fake_run.py::test_reuse_refuses_another_backend_model_path_or_tokenizer",),
        area="execute",
    ),
    Mutation(
        "one writer: the results directory's own lock is shared, not exclusive (.lock deleted lets a second in)",
        "executor/store.py",
        "            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
        "            fcntl.flock(dir_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n",
        ("tests/executor/test_one_writer.py::test_deleting_the_lock_file_does_not_let_a_second_writer_in",),
        area="execute",
    ),
    Mutation(
        "scoring index: trusts the stamp's own plan hash (another plan's index accepted)",
        "scorer/planload.py",
        "        if stamp != _stamp(header.plan_hash, idx):\n",
        '        if stamp != _stamp(stamp.get("plan_hash", ""), idx):\n',
        ("tests/scorer/test_index.py",),
        area="score",
    ),
    Mutation(
        "custom filter: documents handed over in the wrong order",
        "scorer/filters/custom.py",
        "    return Responses.from_py(list(f(st.to_py(), ctx.docs())))\n",
        "    return Responses.from_py(list(f(st.to_py(), ctx.docs()[::-1])))\n",
        ("tests/scorer/test_parity_hooks.py",),
        area="trust",
    ),
    Mutation(
        "rouge: Porter stemmer on (lm-eval/evaluate use none)",
        "scorer/metrics/rouge.py",
        "    scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=False)\n",
        "    scorer = rouge_scorer.RougeScorer(rouge_types=types, use_stemmer=True)\n",
        ("tests/scorer/test_parity_hooks.py",),
        area="score",
    ),
    Mutation(
        "pass@k: estimator off by one",
        "scorer/passk.py",
        "    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))\n",
        "    return float(1.0 - np.prod(1.0 - k / np.arange(n - c, n + 1)))\n",
        (
            "tests/scorer/test_code_tasks.py::test_pass_at_k_is_code_evals_estimator",
            "tests/scorer/test_parity_hooks.py",
        ),
        area="sandbox",
    ),
    # --- #26: compile-time strictness (area 1) ---------------------------------------------------------
    Mutation(
        "MC target: index -1 accepted (Python's negative indexing)",
        "compiler/build/builder.py",
        "            if isinstance(g, int) and not 0 <= g < len(choices):\n",
        "            if isinstance(g, int) and not -len(choices) <= g < len(choices):\n",
        (f"{TS}::test_index_just_outside_the_choices_is_a_compile_error",),
        area="compile (1)",
    ),
    Mutation(
        "MC target: index == len(choices) accepted (<= for <)",
        "compiler/build/builder.py",
        "            if isinstance(g, int) and not 0 <= g < len(choices):\n",
        "            if isinstance(g, int) and not 0 <= g <= len(choices):\n",
        (f"{TS}::test_index_just_outside_the_choices_is_a_compile_error",),
        area="compile (1)",
    ),
    Mutation(
        "MC target: index 0 refused (< for <=)",
        "compiler/build/builder.py",
        "            if isinstance(g, int) and not 0 <= g < len(choices):\n",
        "            if isinstance(g, int) and not 0 < g < len(choices):\n",
        (f"{TS}::test_first_and_last_index_compile",),
        area="compile (1)",
    ),
    Mutation(
        "MC target: a string target matched case-insensitively",
        "compiler/build/builder.py",
        "            if isinstance(g, str) and g not in choices:\n",
        "            if isinstance(g, str) and g.lower() not in [c.lower() for c in choices]:\n",
        (f"{TS}::test_string_target_not_among_the_choices_is_a_compile_error",),
        area="compile (1)",
    ),
    # --- #26: scoring branches no golden reaches (area 2) ----------------------------------------------
    Mutation(
        "group: weight_by_size false ignored (always by size)",
        "scorer/groups/tree.py",
        '                weight = bool(cfg.get("weight_by_size", True))\n',
        "                weight = True\n",
        (f"{UB}::test_group_weight_by_size_false_is_the_plain_mean_of_subtasks",),
        area="score (2)",
    ),
    Mutation(
        "group: pooled stderr for an equal-weight mean",
        "scorer/groups/tree.py",
        "                            agg.pooled_sample_stderr(stderrs, sizes) if weight else "
        "agg.unweighted_mean_stderr(stderrs)\n",
        "                            agg.pooled_sample_stderr(stderrs, sizes)\n",
        (f"{UB}::test_group_weight_by_size_false_is_the_plain_mean_of_subtasks",),
        area="score (2)",
    ),
    Mutation(
        "metric registry: a registered metric is not made known to the compile checks",
        "scorer/metrics/registry.py",
        "    if metric.name not in METRIC_SPECS:  # a new name",
        "    if False:  # a new name",
        ("tests/scorer/test_metric_registration.py::test_a_new_mc_metric_is_one_registration",),
        area="score (2)",
    ),
    Mutation(
        "aggregation registry: a registered aggregation is not made known to the compile checks",
        "scorer/metrics/aggregations.py",
        "    if aggregation.name not in aggregation_names():  # a new name",
        "    if False:  # a new name",
        ("tests/scorer/test_metric_registration.py::test_a_new_aggregation_is_one_registration",),
        area="score (2)",
    ),
    Mutation(
        "aggregation registry: every aggregation by name is the mean",
        "scorer/metrics/aggregations.py",
        "    return AGGREGATION_REGISTRY[name].fn(items)\n",
        "    return py_mean(items)\n",
        ("tests/scorer/test_metric_registration.py::test_a_new_aggregation_is_one_registration",),
        area="score (2)",
    ),
    Mutation(
        "aggregation registry: a bootstrapped aggregation without array replicates gets no stderr",
        "scorer/metrics/aggregations.py",
        "    if a.bootstrap:\n",
        "    if a.bootstrap and a.replicates is not None:\n",
        ("tests/scorer/test_metric_registration.py::test_a_new_aggregation_is_one_registration",),
        area="score (2)",
    ),
    Mutation(
        "group: weighted_mean ignores its weight_by_size flag",
        "scorer/metrics/aggregations.py",
        "    w = list(sizes) if weight_by_size else [1] * len(sizes)\n",
        "    w = list(sizes)\n",
        (f"{UB}::test_group_weight_by_size_false_is_the_plain_mean_of_subtasks",),
        area="score (2)",
    ),
    Mutation(
        "acc_norm (vectorised path): divides by UTF-8 bytes, not characters",
        "scorer/metrics/evidence.py",
        "        return self.choices.str.len_chars().cast(pl.Float64).to_numpy().reshape(self.cond.shape)\n",
        "        return self.choices.str.len_bytes().cast(pl.Float64).to_numpy().reshape(self.cond.shape)\n",
        (f"{UB}::test_acc_norm_counts_characters_and_acc_bytes_bytes",),
        area="score (2)",
    ),
    Mutation(
        "acc_norm (per-document path): divides by UTF-8 bytes, not characters",
        "scorer/metrics/loglikelihood.py",
        "        choices=lambda d: d.hit(d.argmax_over([float(len(c)) for c in d.choices])),\n",
        '        choices=lambda d: d.hit(d.argmax_over([float(len(c.encode("utf-8"))) for c in d.choices])),\n',
        (f"{UB}::test_acc_norm_counts_characters_and_acc_bytes_bytes",),
        area="score (2)",
    ),
    Mutation(
        "acc_bytes (per-document path): divides by characters",
        "scorer/metrics/loglikelihood.py",
        '        choices=lambda d: d.hit(d.argmax_over([float(len(c.encode("utf-8"))) for c in d.choices])),\n',
        "        choices=lambda d: d.hit(d.argmax_over([float(len(c)) for c in d.choices])),\n",
        (f"{UB}::test_acc_norm_counts_characters_and_acc_bytes_bytes",),
        area="score (2)",
    ),
    Mutation(
        "exact_match ignore_punctuation: strips Unicode punctuation and symbols (lm-eval: ASCII only)",
        "scorer/metrics/exact_match.py",
        '_PUNCT_CLASS = "[" + "".join(f"\\\\x{{{ord(c):X}}}" for c in string.punctuation) + "]"\n',
        '_PUNCT_CLASS = r"[\\p{P}\\p{S}]"\n',
        ("tests/scorer/test_exact_match.py::test_ignore_punctuation_strips_ascii_only_like_lm_eval",),
        area="score (2)",
    ),
    # --- #26: precedence and caching (area 3) ----------------------------------------------------------
    Mutation(
        "lookup order: conf/task before run.include_path",
        "compiler/tasks/select.py",
        "    lookups.append(unqualified(conf, QUALIFIER))\n",
        "    lookups.insert(0, unqualified(conf, QUALIFIER))\n",
        (f"{PR}::test_include_path_wins_over_conf_task_and_the_catalog",),
        area="catalog (3)",
    ),
    Mutation(
        "lookup order: the catalog first (lookups reversed)",
        "compiler/tasks/select.py",
        "    lookup = chain_lookups(*lookups)\n",
        "    lookup = chain_lookups(*reversed(lookups))\n",
        (f"{PR}::test_conf_task_wins_over_the_catalog",),
        area="catalog (3)",
    ),
    Mutation(
        "catalog cache key: mtime left out",
        "compiler/tasks/lm_eval_catalog.py",
        '/{name}\\0{st.st_size}\\0{st.st_mtime_ns}\\n"',
        '/{name}\\0{st.st_size}\\n"',
        (f"{CAT}::test_index_cache_key_is_path_size_and_mtime",),
        area="catalog (3)",
    ),
    Mutation(
        "catalog cache key: mtime in whole seconds",
        "compiler/tasks/lm_eval_catalog.py",
        '/{name}\\0{st.st_size}\\0{st.st_mtime_ns}\\n"',
        '/{name}\\0{st.st_size}\\0{int(st.st_mtime)}\\n"',
        (f"{CAT}::test_index_cache_key_is_path_size_and_mtime",),
        area="catalog (3)",
    ),
    Mutation(
        "catalog cache key: size left out",
        "compiler/tasks/lm_eval_catalog.py",
        '/{name}\\0{st.st_size}\\0{st.st_mtime_ns}\\n"',
        '/{name}\\0{st.st_mtime_ns}\\n"',
        (f"{CAT}::test_index_cache_key_is_path_size_and_mtime",),
        area="catalog (3)",
    ),
    # --- #26: execute CLI wiring (area 4), weak tests made strong ----------------------------------------
    Mutation(
        "execute: the plan's token rule not checked against model.* overrides",
        "executor/runmodel.py",
        "    spec = check_token_rule(header, spec, plan_path)\n",
        "    spec = spec  # check_token_rule(header, spec, plan_path)\n",
        ("tests/executor/test_token_rule.py::test_cli_execute_refuses_a_contradicting_token_rule",),
        area="execute (4)",
    ),
    Mutation(
        "execute: another tokenizer accepted (condition inverted)",
        "executor/modelconf.py",
        "    if want and have and want != have:\n",
        "    if not want and have and want != have:\n",
        ("tests/executor/test_fake_run.py::test_bad_inputs_exit_2_and_touch_nothing",),
        area="execute",
    ),
    # --- #26: both streams capped (area 5), the strong cgroup branch runs --------------------------------
    Mutation(
        "sandbox: output cap on stdout only",
        "scorer/sandbox/run.py",
        "                if len(buf) > cap:\n",
        "                if fd == out_fd and len(buf) > cap:\n",
        ("tests/scorer/test_sandbox.py::test_printing_64_mb_to_stderr_is_cut_off",),
        area="sandbox (5)",
    ),
    Mutation(
        "sandbox: output cap off by one (exactly max_output_bytes refused)",
        "scorer/sandbox/run.py",
        "                if len(buf) > cap:\n",
        "                if len(buf) >= cap:\n",
        ("tests/scorer/test_sandbox.py::test_output_cap_boundary",),
        area="sandbox (5)",
    ),
    Mutation(
        "sandbox: cgroup v1 never found (the tests would fall back to their weaker branch)",
        "scorer/sandbox/cgroup.py",
        "    if len(v1) == 2:\n",
        "    if len(v1) == 3:\n",
        ("tests/scorer/test_sandbox.py::test_process_limit_stops_forking",),
        area="sandbox",
    ),
    # --- #26: the report's marks, in the browser (area 6) --------------------------------------------------
    Mutation(
        "report: the argmax mark of the first run shown for every run",
        "report/assets/report.js",
        '        var cls = best[r] === i && n > 1 ? \' class="best"\' : "";\n',
        '        var cls = best[0] === i && n > 1 ? \' class="best"\' : "";\n',
        (f"{BR}::test_gold_and_argmax_marks_per_run",),
        area="report (6)",
    ),
    Mutation(
        "report: gold mark never on choice 0",
        "report/assets/report.js",
        "      var isGold = gold.indexOf(i) >= 0;\n",
        "      var isGold = gold.indexOf(i) > 0;\n",
        (f"{BR}::test_gold_and_argmax_marks_per_run",),
        area="report (6)",
    ),
    Mutation(
        "report: provenance rows that differ not marked with two runs",
        "report/provenance.py",
        "        differ = len(runs) > 1 and len(set(vals)) > 1 and k not in (",
        "        differ = len(runs) > 2 and len(set(vals)) > 1 and k not in (",
        (f"{BR}::test_provenance_highlights_exactly_the_rows_that_differ",),
        area="report (6)",
    ),
    Mutation(
        "report: the highlight's CSS selector misspelt (marked, not shown)",
        "report/assets/report.css",
        "table.prov tr.differs th { color: var(--r1); }\n",
        "table.prov tr.differ th { color: var(--r1); }\n",
        (f"{BR}::test_provenance_highlights_exactly_the_rows_that_differ",),
        area="report (6)",
    ),
    # --- #26: trust at import time (area 7) ----------------------------------------------------------------
    Mutation(
        "trust: the hash checked when the folder is found, not on the bytes imported",
        "plans/usercode/funcload.py",
        "        if got != self.want:\n",
        "        if not self.want:\n",
        (f"{CO}::test_file_changed_between_search_and_import_is_refused",),
        area="trust (7)",
    ),
    Mutation(
        "trust: a file imported by the hook but not hashed at compile is loaded",
        "plans/usercode/funcload.py",
        '            raise CodeRefused(f"{origin} was not hashed when the plan was compiled; recompile the plan")\n',
        "            return None\n",
        (f"{CO}::test_module_not_hashed_at_compile_is_refused",),
        area="trust",
    ),
    Mutation(
        "trust: a same-named module imported elsewhere handed to the hook",
        "plans/usercode/funcload.py",
        "        shadowed = {n: sys.modules.pop(n) for n in _sibling_names(path.parent, root, files) "
        "if n in sys.modules}\n",
        "        shadowed: dict[str, types.ModuleType] = {}\n",
        (f"{CO}::test_a_same_named_module_imported_elsewhere_is_not_handed_to_the_hook",),
        area="trust (7)",
    ),
    # --- docs sections the first round had no mutant for ----------------------------------------------
    Mutation(
        "plan: the plan hash not compared (a modified plan read)",
        "plans/plan/integrity.py",
        '    if digest != layout.raw.get("plan_hash"):\n',
        "    if not digest:\n",
        ("tests/plans/test_io.py::test_edited_header_is_refused_by_the_plan_hash",),
        area="plan",
    ),
    Mutation(
        "distributed: a death blames the oldest queued chunk (whose answer may have died with the worker)",
        "executor/pool/dispatch.py",
        "        if len(lost) == 1:\n",
        "        if lost:\n",
        ("tests/executor/test_dispatch.py::test_the_killing_chunk_is_blamed_not_a_neighbour",),
        area="distributed",
    ),
    Mutation(
        "distributed: chunks cut inside a document",
        "executor/pool/chunks.py",
        "        if doc != last_doc and len(current) >= chunk_size:\n",
        "        if len(current) >= chunk_size:\n",
        ("tests/executor/test_chunks.py::test_chunks_cover_the_plan_once_at_document_boundaries",),
        area="distributed",
    ),
    Mutation(
        "distributed: a run missing Instance rows passes the completeness check (subset for equality)",
        "executor/pool/chunkstore.py",
        "    if have != want:\n",
        "    if not have <= want:\n",
        ("tests/executor/test_chunks.py::test_check_complete_finds_gaps_duplicates_and_strays",),
        area="distributed",
    ),
    Mutation(
        "diff: a change of a key with no cause of its own classed as scoring only (not config)",
        "diff/changes.py",
        '    return "config"\n',
        '    return "scoring"\n',
        ("tests/diff/test_diff.py::test_config_only_change_keeps_records",),
        area="diff",
    ),
    Mutation(
        "lock: a moved task hash with the same instance count passes",
        "lock/lockfile.py",
        '            elif o.get(key) != n.get(key) or o.get("n_instances") != n.get("n_instances"):\n',
        '            elif o.get("n_instances") != n.get("n_instances"):\n',
        ("tests/lock/test_lock.py::test_one_character_template_change_is_caught",),
        area="lock",
    ),
    Mutation(
        "plan header: an n_docs above its tasks' sum accepted (the sum compared one way only)",
        "plans/plan/validate.py",
        "        if summed != total:\n",
        "        if summed > total:\n",
        (VR,),
        area="plan",
    ),
    Mutation(
        "plan header: a task named twice accepted",
        "plans/plan/validate.py",
        "        if name in names:\n",
        "        if name in names and name not in names:\n",
        (VR,),
        area="plan",
    ),
    # #53 acceptance 4: the eight one-line bugs of #36-#39 that survived their area's tests, and three the
    # real-model end-to-end tests caught only by luck; each now has a test without a real model
    Mutation(
        "@gen: the letter rule without its anchor (a letter guessed out of a sentence)",
        "compiler/formats/templates.py",
        'GEN_LETTER_REGEX = r"^\\s*\\(?([A-Z])\\b"\n',
        'GEN_LETTER_REGEX = r"\\s*\\(?([A-Z])\\b"\n',
        (FG + "::test_gen_letter_rule_reads_the_letter_the_answer_starts_with",),
        area="compile",
    ),
    Mutation(
        "sweep: every variant judged by the base task's cloze metric, not its format's",
        "compiler/formats/apply.py",
        '    record["metric"] = format_metric(fmt, ad.cf_metric)\n',
        '    record["metric"] = format_metric("cf", ad.cf_metric)\n',
        (FG + "::test_each_sweep_variant_is_judged_by_its_formats_metric",),
        area="compile",
    ),
    Mutation(
        "plan-power: the baseline's sd from the plan's document count (MDE off by sqrt(plan/baseline))",
        "scorer/statistics/power.py",
        "            sd = se_f * math.sqrt(n_base)\n",
        "            sd = se_f * math.sqrt(n)\n",
        (EG + "::test_plan_power_takes_the_sd_from_the_baselines_document_count",),
        area="score",
    ),
    Mutation(
        "subsample: strata with nothing scored yet weighted in the stratified estimate",
        "scorer/statistics/subsample.py",
        "    pop = sum(present.values())  # strata with no scored document drop out (partial results)\n",
        "    pop = sum(sizes.values())\n",
        (EG + "::test_strata_without_a_scored_document_carry_no_weight",),
        area="score",
    ),
    Mutation(
        "import-batch: an output file lacking requests (no error lines) called finished",
        "executor/batch.py",
        "        if not missing:\n            manifest.finished = _now()\n",
        "        if not failed:\n            manifest.finished = _now()\n",
        ("tests/executor/test_batch.py::test_an_output_lacking_requests_is_unfinished_exit_2_and_resumable",),
        area="execute",
    ),
    Mutation(
        "chat and batch bodies: seed 0 dropped (taken for no seed)",
        "executor/backends/openai_chat.py",
        '    if p.seed is not None:\n        body["seed"] = p.seed\n',
        '    if p.seed:\n        body["seed"] = p.seed\n',
        (RG + "::test_seed_0_reaches_batch_and_chat_bodies",),
        area="execute",
    ),
    Mutation(
        "hf: one greedy row makes the whole batch greedy",
        "executor/backends/hf_sample.py",
        "        self.plain = all(r.params.greedy and not _penalised(r.params) for r in rows)\n",
        "        self.plain = any(r.params.greedy and not _penalised(r.params) for r in rows)\n",
        (RG + "::test_one_greedy_row_leaves_the_sampled_rows_sampled",),
        area="execute",
    ),
    Mutation(
        "efficiency: generated tokens left out of the limit",
        "executor/jobloop.py",
        "        stats.distinct_tokens += distinct_positions([x.ids for x in inputs]) + generated\n",
        "        stats.distinct_tokens += distinct_positions([x.ids for x in inputs])\n",
        (RG + "::test_the_efficiency_limit_counts_generated_tokens",),
        area="execute",
    ),
    Mutation(
        "judge: a grade equal to the minimum refused (unparsed)",
        "plans/vocab/judging.py",
        "        if (self.min is not None and value < self.min) or",
        "        if (self.min is not None and value <= self.min) or",
        ("tests/cli/test_judge_identity.py::test_parse_rule_refuses_non_finite_bounds_and_grades",),
        area="score",
    ),
    Mutation(
        "maj@N: the vote taken over the scores, not over the filtered answers",
        "scorer/samplescore.py",
        "        return xs[majority_index(answers)]\n",
        "        return xs[majority_index(vals)]\n",
        ("tests/scorer/test_samplescore.py::test_majority_votes_over_the_answers_not_the_scores",),
        area="score",
    ),
    Mutation(
        "acc_per_token: normalised by the continuation's bytes, not its tokens",
        "scorer/metrics/loglikelihood.py",
        "        choices_vector=lambda a: a.hits(a.argmax_over(a.tokens())),\n",
        "        choices_vector=lambda a: a.hits(a.argmax_over(a.byte_lengths())),\n",
        ("tests/scorer/test_cloze_normalisations_fake.py",),
        area="score",
    ),
]


def _restore_journal() -> list[str]:
    """Put back any file a killed earlier run left mutated."""
    if not JOURNAL.exists():
        return []
    saved = json.loads(JOURNAL.read_text())
    for rel, b64 in saved.items():
        (REPO / rel).write_bytes(base64.b64decode(b64))
    JOURNAL.unlink()
    return sorted(saved)


def _pytest(tests: tuple[str, ...], timeout: float) -> tuple[int, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        rc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    return rc, time.monotonic() - t0


def _verdict(rc: int) -> str:
    return {0: "GREEN", 1: "RED"}.get(rc, f"ERROR(rc={rc})")


_BASELINES: dict[tuple[str, ...], str] = {}  # tests -> verdict on the unchanged code (run once per test set)


def run_one(m: Mutation, baseline: bool, timeout: float) -> tuple[str, str]:
    path = REPO / m.file
    original = path.read_bytes()
    text = original.decode()
    if text.count(m.old) != 1:
        return "-", f"NOT FOUND ({text.count(m.old)} matches)"
    base = "skipped"
    if baseline:
        if m.tests not in _BASELINES:
            rc, secs = _pytest(m.tests, timeout)
            _BASELINES[m.tests] = f"{_verdict(rc)} ({secs:.0f} s)"
        base = _BASELINES[m.tests]
        if not base.startswith("GREEN"):
            return base, "not run (baseline not green)"
    JOURNAL.write_text(json.dumps({m.file: base64.b64encode(original).decode()}))
    try:
        path.write_bytes(text.replace(m.old, m.new).encode())
        rc, secs = _pytest(m.tests, timeout)
    finally:
        path.write_bytes(original)
        JOURNAL.unlink(missing_ok=True)
    assert path.read_bytes() == original
    return base, f"{_verdict(rc)} ({secs:.0f} s)"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="substrings of mutation names (or exact areas) to run")
    ap.add_argument("--no-baseline", action="store_true", help="do not run the tests on the unchanged code first")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    restored = _restore_journal()
    if restored:
        print(f"restored from an interrupted run: {', '.join(restored)}", file=sys.stderr)
    chosen = [m for m in MUTATIONS if not args.only or any(s in m.name or s == m.area for s in args.only)]
    rows = []
    t0 = time.monotonic()
    for m in chosen:
        base, mutated = run_one(m, not args.no_baseline, args.timeout)
        rows.append((m.name, m.area, m.file, " ".join(t.split("::")[-1] for t in m.tests), base, mutated))
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print("| mutation | area | file | tests | baseline | mutated |\n|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    red = sum(r[5].startswith("RED") for r in rows)
    print(f"\n{red} of {len(rows)} mutations RED in {time.monotonic() - t0:.0f} s")
    return 0 if red == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
