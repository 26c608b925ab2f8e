"""README.md is a README (under 150 lines, the two commands first), and every section the old ~1,030-line
README had lives on in the docs: the same heading on the page it moved to, with its first and last lines."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

# (old README heading, the docs page it moved to, the section's first line, the end of its last line), as the
# README had them before the docs site (commit cb9995f); a line whose links were repointed is represented by
# the nearest line moved unchanged
MOVED = (
    (
        "Quick start (no GPU, no network)",
        "tutorial/first-evaluation.md",
        "Install and run the embedded default task (the generated `arith`, 200 problems, 3-shot) on",
        "note what moved in CHANGELOG.",
    ),
    (
        "Installing as a package (no checkout)",
        "how-to/install.md",
        "lmeval is one Python package, `lmeval`, with its configs (`lmeval/conf/`), the release loc",
        "e shipped lock; `--update` rewrites only a checkout's lock (or a `--lock FILE` elsewhere).",
    ),
    (
        "Which extra where",
        "how-to/install.md",
        "A plan is compiled on a laptop and executed on a GPU box. Compiling, showing, diffing and ",
        "ny` (one tracker each; full `mlflow` works too) | `lmeval log` / `lmeval score --log-to` |",
    ),
    (
        "CLI",
        "reference/commands.md",
        "lmeval compile [-m] [--no-cache] [-j N] [OVERRIDES]   write a plan; last line = its path (",
        "doc id where they apply, exit status 2, and no traceback; nothing already written is lost.",
    ),
    (
        "Compile overrides (Hydra)",
        "reference/configuration.md",
        "`conf/config.yaml` composes the groups `task/`, `model/` and `run/` with Hydra's Compose A",
        "or a Hub id `org/name`) uses any Hugging Face model; its tokenizer gives the token ids and",
    ),
    (
        "Build cache and workers",
        "reference/configuration.md",
        "`lmeval compile` (and everything that compiles: `run`, `diff` with overrides, `lock`) keep",
        "der) is the error reported. Task-folder Python modules are loaded afresh by every compile.",
    ),
    (
        "The plan",
        "reference/plan-format.md",
        "A plan is a canonical msgpack stream: a header (format, version, resolved config, model/to",
        "are refused with a one-line error, exit status 2, without decompressing into memory.",
    ),
    (
        "Executing a plan",
        "reference/execute.md",
        "`lmeval execute PLAN [model.backend=vllm|hf|openai|fake] [model.path=DIR] [model.engine.KE",
        "rompt change only the changed Instances run, and after a scoring-only change nothing runs.",
    ),
    (
        "Many GPUs, many machines",
        "how-to/many-gpus.md",
        "One plan, many engines, one ordinary results directory (`lmeval score`, `--reuse`, resume ",
        " mixed plans. A shard can itself use `--workers` (e.g. one multi-GPU node per array task).",
    ),
    (
        "What repeats exactly",
        "explanation/what-repeats.md",
        "- **Bit for bit, by construction:** a plan (the same configs and data give the same bytes ",
        "compatibility](lm-eval-compatibility.md#numeric-bounds)).",
    ),
    (
        "Models",
        "how-to/own-model.md",
        "`model=tiny` (the default config, `conf/model/tiny.yaml`) is the built-in reference model.",
        "`logits_processors`).",
    ),
    (
        "JSONL task specs",
        "how-to/own-task.md",
        "Teams' own eval sets, one JSON object per line (`task_id`, `category` ∈ arithmetic, mcq, c",
        "passed. `LMEVAL_SANDBOX_PYTHON` picks the interpreter.",
    ),
    (
        "lm-eval's task catalog by name",
        "how-to/lm-eval-task.md",
        "When lm-eval is installed (`pip install lm-eval`), its `lm_eval/tasks` folder is a built-i",
        "`--json` gives one object a line.",
    ),
    (
        "Seeded tasks (`run.seed`, `run.seed_mode`)",
        "how-to/leaderboard.md",
        "Some catalog tasks shape their prompts with Python's global `random` or numpy's global gen",
        "<!-- seeded-tasks:end -->",
    ),
    (
        "Code tasks (humaneval, mbpp)",
        "how-to/code-tasks.md",
        "`+task=humaneval` and `+task=mbpp` (data: `../shared/data/humaneval`, `mbpp`) are lm-eval ",
        "utions score 164/164. Built-ins need no `--trust-code`: no code from the task folder runs.",
    ),
    (
        "Task code and trust",
        "how-to/own-task.md",
        "- `!function module.attr` resolves to a file in the YAML's own folder tree (`utils` -> `DI",
        "sha256 is refused.",
    ),
    (
        "Hostile input and the sandbox",
        "reference/hostile-input.md",
        "Task files, data rows, plans, results directories and the code under test are all treated ",
        "`timeout`, `output_limit`, `killed`, `failed`.",
    ),
    (
        "lm-eval compatibility",
        "explanation/lm-eval-compatibility.md",
        "- Task YAMLs load unchanged (`!function`, `include:`, `group`/`tag`) by name from lm-eval'",
        "path) and imported by `lmeval score` only",
    ),
    (
        "Token ids and BOS (`model.add_bos_token`, `model.prefix_token_id`)",
        "explanation/lm-eval-compatibility.md",
        "The compiler stores token ids in the plan exactly as lm-eval 0.4.13 (`--model hf` and `--m",
        "`model.engine.enable_chunked_prefill` to override.",
    ),
    (
        "Scoring",
        "reference/scoring.md",
        "`lmeval score` applies each task's `filter_list` and `metric_list` as lm-eval 0.4.13 does ",
        "`process_results`, aggregation, stderr) is lm-eval's own code.",
    ),
    (
        "Reasoning models (`run.reasoning`, `run.chat_template_kwargs`)",
        "how-to/reasoning-models.md",
        "A model that thinks before it answers (`<think>…</think>`: Qwen3, DeepSeek-R1 and its dist",
        "came from (re-execute to recount); a backend that returns no token ids gives none.",
    ),
    (
        "Diffing plans",
        "tutorial/first-diff.md",
        "`lmeval diff OLD NEW` streams both plans (skipping tasks whose hashes match) and prints: (",
        "ataclasses: `report.to_json()`, `report.summary()`), `render_text(report)` the text above.",
    ),
    (
        "Reports: one HTML page for one or many runs",
        "tutorial/first-report.md",
        "`lmeval report RESULTS_DIR... [--baseline DIR] [-o report.html]` writes one file that open",
        "that the chart's pixels are drawn, and that every score, interval and marked difference is the runs'.",
    ),
    (
        "Exports: lm-eval sample logs, Every Eval Ever, Hub eval results",
        "how-to/exports-trackers.md",
        "`lmeval export RESULTS_DIR --format FORMAT [-o OUT] [--plan PLAN]` writes a scored run (`l",
        "`tests/report/test_export_hf.py`.",
    ),
    (
        "Experiment trackers: W&B, Trackio, MLflow",
        "how-to/exports-trackers.md",
        "`lmeval log RESULTS_DIR --to TRACKER` logs a scored run to experiment trackers, and `lmeva",
        "covers names, missing libraries and lazy imports.",
    ),
    (
        "Contamination: which documents a corpus holds, and the score without them",
        "how-to/contamination.md",
        "`lmeval contamination PLAN --corpus PATH... -o REPORT_DIR [--ngram 13] [--fields prompt,ta",
        "from every node.",
    ),
    (
        "Release lock: prompts do not change silently",
        "reference/release-lock.md",
        "`lock/lock.json` records the task hash and Instance count of every shipped task config, co",
        "ge and explain it in `CHANGELOG.md`: **a changed lock in a commit means changed prompts.**",
    ),
    (
        "Benchmarks and cross-checks",
        "reference/benchmarks.md",
        "side by side and rewrites `bench/results/<name>.md`:",
        "and prints a table: every mutation must turn its test red.",
    ),
    (
        "Known gaps",
        "reference/layout.md",
        "- Code-task scoring runs documents side by side (one thread per CPU, each program its own ",
        "idates one after another; 164 humaneval programs take about 35 s on a busy 2-core machine.",
    ),
    (
        "Layout",
        "reference/layout.md",
        "`conf/` Hydra configs · `compiler/` configs → plan · `plans/` the contract (plan format an",
        " never each other; `tests/test_layout.py` checks the layers, import circles and old names.",
    ),
)


def test_readme_is_short_with_the_two_commands_first() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    main, tests = blocks[0].strip(), blocks[1].strip()
    assert main.startswith("python3 -m venv .venv") and main.endswith("lmeval run +task=arith model=smollm2")
    assert tests.startswith("python3 -m venv .venv") and tests.endswith(".venv/bin/python -m pytest -q")
    assert "&& .venv/bin/mkdocs build --strict &&" in tests
    tutorial = (DOCS / "tutorial" / "first-evaluation.md").read_text(encoding="utf-8")
    assert main in tutorial and tests in tutorial  # the quick start repeats them, exactly
    before = text.split("```bash", 1)[0]
    assert "##" not in before  # nothing but the introduction comes before the commands
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / page).is_file(), page


def test_every_old_readme_section_is_in_the_docs() -> None:
    pages = {p.relative_to(DOCS).as_posix(): p.read_text(encoding="utf-8") for p in DOCS.rglob("*.md")}
    for heading, page, first, last in MOVED:
        text = pages[page]
        headings = [h.lstrip("#").strip() for h in text.splitlines() if h.startswith("#")]
        assert heading in headings, (page, heading)
        section = text.split(heading, 1)[1]
        assert first in section and last in section, (page, heading)


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert f": {page.relative_to(DOCS).as_posix()}" in nav, page
