"""Every shipped task config compiles; lm-eval YAMLs compile through run.include_path; the CLI contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmeval import compiler
from lmeval.compiler.config import CONF_DIR
from lmeval.plans.plan import DocRecord, InstanceRecord, read_plan

LMEVAL_TASKS = Path(__import__("importlib").util.find_spec("lm_eval").origin).parent / "tasks"  # type: ignore[arg-type]

SHIPPED = sorted(p.stem for p in (CONF_DIR / "task").glob("*.yaml"))
SPEC_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spec" / "tasks.jsonl"


def test_shipped_list_covers_the_issue() -> None:
    want = {"arith", "arc_challenge", "arc_easy", "gsm8k", "gsm8k_cot_llama", "asdiv", "asdiv_cot_llama", "mmlu",
            "winogrande", "piqa", "boolq"}  # fmt: skip
    assert want <= set(SHIPPED)


def test_arith_compiles_offline_through_cli(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli("compile", "+task=arith")
    assert rc == 0, err
    path = Path(out.strip().splitlines()[-1])
    assert path.parent == Path("lmeval-plans") and path.name.startswith("arith-") and path.suffix == ".msgpack"
    plan = read_plan(path)
    assert plan.header.plan_hash.startswith(path.stem.split("-")[-1])
    t = plan.header.task("arith")
    assert (t.output_type, t.n_docs, t.num_fewshot) == ("generate_until", 200, 3)
    inst = plan.instances[0]
    assert inst.request_type == "generate_until" and inst.context.endswith("\nAnswer:")
    assert inst.context.count("Question: What is ") == 4  # 3 shots + the question
    assert inst.generation_kwargs == {
        "until": ["\n", "Question:"],
        "do_sample": False,
        "temperature": 0.0,
        "max_gen_toks": 8,
    }
    assert inst.context_ids and inst.continuation_ids is None
    assert plan.header.model.name == "tiny" and plan.header.model.path is None  # a Hub id only, never a directory
    assert plan.header.model.tokenizer_hash and len(plan.header.model.tokenizer_hash) == 64


def test_jsonl_spec_task_compiles() -> None:
    header, records = compiler.compile_plan(["+task=jsonl", f"task.jsonl.path={SPEC_FIXTURE}"])
    insts = [r for r in records if isinstance(r, InstanceRecord)]
    docs = [r for r in records if isinstance(r, DocRecord)]
    assert header.tasks[0].name == "jsonl" and len(insts) == len(docs) > 0
    assert all(i.generation_kwargs == d.doc["generation_kwargs"] for i, d in zip(insts, docs, strict=True))


@pytest.mark.parametrize("task", [t for t in SHIPPED if t not in ("arith", "mmlu", "jsonl", "trajectory")])
def test_shipped_task_compiles_on_shared_data(task: str, data: Path) -> None:
    from lmeval.lock.build import needs_chat_template  # conversation (bfcl_*) and multi-turn (mt_bench) tasks

    chat = ["run.apply_chat_template=true"] if needs_chat_template(task) else []
    header, records = compiler.compile_plan([f"+task={task}", f"run.data_dir={data}", "run.limit=3", *chat])
    assert [t.name for t in header.tasks] == [task]
    docs = [r for r in records if isinstance(r, DocRecord)]
    insts = [r for r in records if isinstance(r, InstanceRecord)]
    assert len(docs) == 3 and header.n_docs == 3 and header.n_instances == len(insts) > 0
    assert all(i.context_ids is not None for i in insts)
    assert all(i.continuation_ids for i in insts if i.request_type == "loglikelihood")
    assert records[0] == docs[0]  # each doc record precedes its instances


def test_mmlu_group(data: Path) -> None:
    header, records = compiler.compile_plan(["+task=mmlu", f"run.data_dir={data}", "run.limit=1"])
    assert len(header.tasks) == 57 and header.n_docs == 57 and header.n_instances == 57 * 4
    groups = {g.name: g for g in header.groups}
    assert set(groups) == {"mmlu", "mmlu_stem", "mmlu_other", "mmlu_social_sciences", "mmlu_humanities"}
    assert groups["mmlu"].subtasks == ["mmlu_stem", "mmlu_other", "mmlu_social_sciences", "mmlu_humanities"]
    assert sum(len(groups[g].subtasks) for g in groups if g != "mmlu") == 57
    anatomy = header.task("mmlu_anatomy")
    assert anatomy.groups == ["mmlu_stem", "mmlu"] and anatomy.num_fewshot == 0
    assert anatomy.config["fewshot_config"]["sampler"] == "first_n"
    assert [t.name for t in header.tasks] == sorted(t.name for t in header.tasks)
    inst = next(r for r in records if isinstance(r, InstanceRecord) and r.task == "mmlu_anatomy")
    assert inst.context.startswith("The following are multiple choice questions (with answers) about anatomy.\n\n")
    assert inst.continuation == " A"


def test_several_tasks_and_missing_data_dir_file(cli, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "two.msgpack"
    rc, stdout, err = cli("compile", "+task=[arith,arc_easy]", f"run.data_dir={data}", "run.limit=2", f"run.out={out}")
    assert rc == 0, err
    assert stdout.strip().splitlines()[-1] == str(out)
    assert [t.name for t in read_plan(out).header.tasks] == ["arc_easy", "arith"]
    # no arc_easy/ folder under run.data_dir: the Hub, as lm-eval (offline here: one line naming both)
    rc, stdout, err = cli("compile", "+task=arc_easy", f"run.data_dir={tmp_path}")
    assert rc == 2 and f"run.data_dir has no arc_easy/ folder (looked for {tmp_path}/arc_easy)" in err
    assert len(err.strip().splitlines()) == 1
    # the folder is there but the evaluation split's file is not: an error naming the file
    (tmp_path / "arc_easy").mkdir()
    rc, stdout, err = cli("compile", "+task=arc_easy", f"run.data_dir={tmp_path}")
    assert rc == 2 and f"{tmp_path}/arc_easy/test.jsonl" in err and len(err.strip().splitlines()) == 1


def test_multirun_sweep(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert compiler.expand_sweep(["+task=arith,gsm8k", "run.num_fewshot=0,5", "run.limit=2"]) == [
        ["+task=arith", "run.num_fewshot=0", "run.limit=2"],
        ["+task=arith", "run.num_fewshot=5", "run.limit=2"],
        ["+task=gsm8k", "run.num_fewshot=0", "run.limit=2"],
        ["+task=gsm8k", "run.num_fewshot=5", "run.limit=2"],
    ]
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli("compile", "-m", "+task=arith", "run.num_fewshot=0,2", "run.limit=2")
    assert rc == 0, err
    paths = [Path(p) for p in out.strip().splitlines()[-2:]]
    assert [read_plan(p).header.tasks[0].num_fewshot for p in paths] == [0, 2]


@pytest.mark.parametrize(
    ("folder", "tasks", "n_tasks"),
    [("arc", "[arc_challenge,arc_easy]", 2), ("arc", "[ai2_arc]", 2), ("winogrande", "[winogrande]", 1),
     ("mmlu/default", "[mmlu_humanities]", 13), ("gsm8k", "[gsm8k_cot_llama]", 1)],
)  # fmt: skip
def test_lmeval_yamls_via_include_path(folder: str, tasks: str, n_tasks: int, data: Path) -> None:
    header, _ = compiler.compile_plan(
        [f"run.include_path={LMEVAL_TASKS / folder}", f"run.tasks={tasks}", f"run.data_dir={data}", "run.limit=2"]
    )
    assert len(header.tasks) == n_tasks


def test_include_path_gives_same_records_as_conf_task(data: Path) -> None:
    ours = compiler.compile_plan(["+task=arc_challenge", f"run.data_dir={data}", "run.limit=5", "run.num_fewshot=3"])
    theirs = compiler.compile_plan(
        [
            f"run.include_path={LMEVAL_TASKS / 'arc'}",
            "run.tasks=[arc_challenge]",
            f"run.data_dir={data}",
            "run.limit=5",
            "run.num_fewshot=3",
        ]
    )
    assert ours[1] == theirs[1]


def test_function_refs_recorded_as_data(tmp_path: Path, data: Path) -> None:
    (tmp_path / "utils.py").write_text("def pr(doc, results):\n    return {'acc': 1.0}\n")
    (tmp_path / "t.yaml").write_text(
        "task: t\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{validation: {data / 'boolq' / 'validation.jsonl'}}}}}\n"
        "validation_split: validation\noutput_type: multiple_choice\n"
        "doc_to_text: \"{{question}}?\"\ndoc_to_target: \"{{answer|int}}\"\ndoc_to_choice: ['no', 'yes']\n"
        "process_results: !function utils.pr\n"
    )
    header, _ = compiler.compile_plan([f"run.include_path={tmp_path}", "run.tasks=[t]", "run.limit=2"])
    ref = header.task("t").config["process_results"]
    assert ref["__function__"] == "utils.pr" and ref["file"] == "utils.py"
    assert len(ref["sha256"]) == 64 and ref["files"]["utils.py"] == ref["sha256"]
    assert "path" not in ref and "root" not in ref  # no machine path in the plan


def test_subject_of_a_conf_group_by_name(data: Path) -> None:
    _, one = compiler.compile_plan(
        ["run.tasks=[mmlu_anatomy]", f"run.data_dir={data}", "run.limit=2", "run.num_fewshot=5"]
    )
    _, group = compiler.compile_plan(["+task=mmlu", f"run.data_dir={data}", "run.limit=2", "run.num_fewshot=5"])
    assert one == [r for r in group if r.task == "mmlu_anatomy"]


def test_single_task_key_shorthand() -> None:
    from lmeval.compiler.config import shorthand

    assert shorthand(["+task=jsonl", "task.path=t.jsonl"]) == ["+task=jsonl", "task.jsonl.path=t.jsonl"]
    assert shorthand(["+task=[a,b]", "task.a.x=1"]) == ["+task=[a,b]", "task.a.x=1"]
    header, _ = compiler.compile_plan(["+task=jsonl", f"task.path={SPEC_FIXTURE}"])
    assert header.tasks[0].name == "jsonl"
    header, _ = compiler.compile_plan(["+task=arith", "task.num_fewshot=1", "run.limit=2"])
    assert header.tasks[0].num_fewshot == 1
