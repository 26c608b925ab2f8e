"""Fail fast at compile: a task whose scoring the scorer cannot do is a compile error (plans/vocab/scoring.py).

Each case is a real lm-eval-style task (a multiple_choice and a generate_until task over local JSONL data)
with one scoring mistake. ``lmeval compile`` exits 2 with one line naming file, task and field, and writes no
plan. Custom code (``!function`` metrics, ``process_results`` keys, ``custom`` filter steps) stays allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MC = """task: {name}
dataset_path: json
dataset_kwargs: {{data_files: {{test: {data}}}}}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{q}}}}"
doc_to_target: t
doc_to_choice: c
"""
GEN = """task: {name}
dataset_path: json
dataset_kwargs: {{data_files: {{test: {data}}}}}
test_split: test
output_type: generate_until
doc_to_text: "{{{{q}}}}"
doc_to_target: a
generation_kwargs: {{until: ["\\n"]}}
"""
STRICT = """filter_list:
  - name: strict
    filter:
      - function: regex
        regex_pattern: "{pattern}"
      - function: take_first
"""
UTILS = """def score(references, predictions):
    return float(references[0] == predictions[0])


def pr(doc, results):
    return {"my_key": 1.0}


def keep(resps, docs):
    return resps
"""

# name -> (base, body)
TASKS: dict[str, tuple[str, str]] = {
    "unknown_metric": (MC, "metric_list: [{metric: accuracyy}]"),
    "wrong_output_type": (MC, "metric_list: [{metric: bleu}]"),
    "unknown_aggregation": (MC, "metric_list: [{metric: acc, aggregation: meen}]"),
    "unknown_filter": (GEN, "filter_list: [{name: f, filter: [{function: regexx}, {function: take_first}]}]"),
    "invalid_regex": (GEN, STRICT.format(pattern="(unclosed")),
    "invalid_regex_to_ignore": (GEN, "metric_list: [{metric: exact_match, regexes_to_ignore: ['[a-']}]"),
    "unknown_metric_option": (GEN, "metric_list: [{metric: exact_match, ignore_cases: true}]"),
    "false_string_option": (GEN, "metric_list: [{metric: exact_match, ignore_case: 'false'}]"),
    "bad_higher_is_better": (MC, "metric_list: [{metric: acc, higher_is_better: 'yes'}]"),
    "take_first_k_without_k": (GEN, "filter_list: [{name: f, filter: [{function: take_first_k}]}]"),
    "unknown_filter_argument": (GEN, "filter_list: [{name: f, filter: [{function: regex, regex: 'x'}]}]"),
    "custom_metric_no_aggregation": (GEN, "metric_list: [{metric: !function utils.score}]"),
    "filter_class": (GEN, "filter_list: [{name: f, filter: [{function: !function utils.keep}]}]"),
    # allowed
    "ok_custom_metric": (GEN, "metric_list: [{metric: !function utils.score, aggregation: mean}]"),
    "ok_process_results": (
        MC,
        "process_results: !function utils.pr\n"
        "metric_list: [{metric: my_key, aggregation: mean, higher_is_better: true}]",
    ),
    "ok_custom_filter": (
        GEN,
        "filter_list: [{name: f, filter: [{function: custom, filter_fn: !function utils.keep}, "
        "{function: take_first}]}]",
    ),
    "ok_lmeval_options": (MC, "metric_list: [{metric: f1, average: weighted, ignore_case: true}, {metric: acc}]"),
    "ok_regex": (GEN, STRICT.format(pattern="#### (\\\\-?[0-9\\\\.\\\\,]+)")),
}
GROUPS = {  # name -> (tasks, aggregate_metric_list)
    "grp_unknown_metric": ("[ok_custom_filter]", "[{metric: exact_math}]"),
    "grp_median": ("[ok_custom_filter]", "[{metric: exact_match, aggregation: median}]"),
    "grp_ok": ("[ok_custom_filter, ok_regex]", "[{metric: exact_match, weight_by_size: true}]"),
}

CASES = [
    (
        "unknown_metric",
        "field metric_list[0].metric",
        "unknown metric 'accuracyy'; multiple_choice tasks can use acc, acc_norm, ",
    ),
    ("wrong_output_type", "field metric_list[0].metric", "metric 'bleu' does not apply to multiple_choice tasks"),
    ("unknown_aggregation", "field metric_list[0].aggregation", "unknown aggregation 'meen' (did you mean mean"),
    ("unknown_filter", "field filter_list[0].filter[0].function", "unknown filter function 'regexx' (did you mean"),
    ("invalid_regex", "field filter_list[0].filter[0].regex_pattern", "invalid regular expression '(unclosed'"),
    ("invalid_regex_to_ignore", "field metric_list[0].regexes_to_ignore", "invalid regular expression '[a-'"),
    ("unknown_metric_option", "field metric_list[0].ignore_cases", "unknown option of metric 'exact_match'"),
    ("false_string_option", "field metric_list[0].ignore_case", "the string 'false' (a non-empty string counts"),
    ("bad_higher_is_better", "field metric_list[0].higher_is_better", "must be true or false, got 'yes'"),
    ("take_first_k_without_k", "field filter_list[0].filter[0].k", "filter function 'take_first_k' needs 'k'"),
    ("unknown_filter_argument", "field filter_list[0].filter[0].regex", "unknown argument of filter function 'regex'"),
    ("custom_metric_no_aggregation", "field metric_list[0].aggregation", "metric 'score' needs an aggregation"),
    ("filter_class", "field filter_list[0].filter[0].function", "a '!function' filter class is not supported"),
]


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    d = tmp_path / "tasks"
    d.mkdir()
    mc = tmp_path / "mc.jsonl"
    mc.write_text('{"q": "a", "c": ["x", "y"], "t": 1}\n{"q": "b", "c": ["x", "y"], "t": 0}\n')
    gen = tmp_path / "gen.jsonl"
    gen.write_text('{"q": "2+2=", "a": "4"}\n{"q": "3+3=", "a": "6"}\n')
    (d / "utils.py").write_text(UTILS)
    for name, (base, body) in TASKS.items():
        (d / f"{name}.yaml").write_text(base.format(name=name, data=mc if base is MC else gen) + body + "\n")
    for name, (members, agg) in GROUPS.items():
        (d / f"{name}.yaml").write_text(f"group: {name}\ntask: {members}\naggregate_metric_list: {agg}\n")
    return d


@pytest.mark.parametrize(("task", "field", "message"), CASES, ids=[c[0] for c in CASES])
def test_scoring_mistakes_fail_at_compile(
    task: str, field: str, message: str, tasks_dir: Path, cli, tmp_path: Path
) -> None:
    out = tmp_path / "plan.msgpack"
    rc, _, err = cli("compile", f"run.include_path={tasks_dir}", f"run.tasks=[{task}]", f"--out={out}")
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lmeval compile: error: {tasks_dir / task}.yaml: task {task}, ")
    assert field in lines[0] and message in lines[0], lines[0]
    assert not out.exists() and not list(tmp_path.rglob("*.msgpack"))


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ("grp_unknown_metric", "no task of the group has metric 'exact_math' (did you mean exact_match?)"),
        ("grp_median", "only mean aggregation is supported, got 'median'"),
    ],
)
def test_group_metric_mistakes_fail_at_compile(group: str, message: str, tasks_dir: Path, cli, tmp_path: Path) -> None:
    out = tmp_path / "plan.msgpack"
    rc, _, err = cli("compile", f"run.include_path={tasks_dir}", f"run.tasks=[{group}]", f"--out={out}")
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"lmeval compile: error: {tasks_dir / group}.yaml: ")
    assert f"group {group} aggregate_metric_list" in lines[0] and message in lines[0], lines[0]
    assert not out.exists()


def test_custom_code_and_lmeval_options_still_compile(tasks_dir: Path, cli, tmp_path: Path) -> None:
    ok = [t for t in TASKS if t.startswith("ok_") and t not in ("ok_custom_filter", "ok_regex")]  # those: grp_ok
    out = tmp_path / "plan.msgpack"
    rc, _, err = cli("compile", f"run.include_path={tasks_dir}", f"run.tasks=[{','.join(ok)},grp_ok]", f"--out={out}")
    assert rc == 0, err
    assert out.is_file()


def test_every_shipped_task_passes() -> None:
    """The shipped configs use only what the scorer implements (the release lock compiles them all too)."""
    from lmeval.compiler.config import CONF_DIR, compose
    from lmeval.compiler.runconfig import run_config
    from lmeval.compiler.scorecheck import check_groups, check_task
    from lmeval.compiler.tasks.select import select_tasks

    names = sorted(p.stem for p in (CONF_DIR / "task").glob("*.yaml") if p.stem not in ("jsonl", "trajectory"))
    cfg = compose([f"+task=[{','.join(names)}]"])
    sel = select_tasks(cfg, run_config(cfg.get("run") or {}))
    assert len(sel.tasks) > 60
    for spec in sel.tasks:
        check_task(spec)
    check_groups(sel.groups, sel.tasks)
