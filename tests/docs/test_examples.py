"""The docs' runnable examples run and pass (tests/docs/runner.py), and the runner fails a broken one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.docs.runner import Outcome, all_examples, examples, run_page
from tests.support import data_dir

TUTORIALS = ("tutorial/first-evaluation.md", "tutorial/first-diff.md", "tutorial/first-report.md")


def test_every_runnable_example_in_the_docs_passes(tmp_path: Path) -> None:
    """Pages run side by side, two at a time (CI has 2 cores; a page's blocks run in order in its own folder)."""
    pages = all_examples()
    assert set(TUTORIALS) <= set(pages), sorted(pages)

    def run(page: str) -> list[Outcome]:
        work = tmp_path / page.replace("/", "_")
        work.mkdir()
        return run_page(pages[page], work, data_dir())

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(pages, pool.map(run, pages), strict=True))
    failed = [o.describe() for outcomes in results.values() for o in outcomes if not o.ok]
    assert not failed, "\n\n".join(failed)
    assert all(len(results[p]) == len(pages[p]) for p in pages)  # every block ran


PAGE = """# A page

<!-- runnable -->
```bash
lmeval compile +task=arith run.limit=2 run.out=a.msgpack
```

<!-- runnable -->
```bash
lmeval show no-such-plan.msgpack
```

<!-- runnable -->
```bash
echo never reached
```
"""


def test_a_broken_example_fails_and_names_its_line(tmp_path: Path) -> None:
    blocks = examples(PAGE, "how-to/broken.md")
    assert [b.line for b in blocks] == [5, 10, 15]
    outcomes = run_page(blocks, tmp_path, data_dir())
    assert [o.ok for o in outcomes] == [True, False]  # stops at the first failure
    assert (tmp_path / "a.msgpack").is_file()  # the first block ran in the page's folder
    bad = outcomes[1]
    assert bad.status == 2 and "no-such-plan.msgpack" in bad.output
    assert bad.describe().startswith("docs/how-to/broken.md:10: exit status 2, expected 0")


def test_an_expected_exit_status_is_checked(tmp_path: Path) -> None:
    page = "<!-- runnable exit=1 -->\n```bash\ntrue\n```\n<!-- runnable exit=1 -->\n```bash\nexit 1\n```\n"
    outcomes = run_page(examples(page, "p.md"), tmp_path, data_dir())
    assert [(o.example.exit_status, o.status, o.ok) for o in outcomes] == [(1, 0, False)]
    assert run_page(examples(page, "p.md")[1:], tmp_path, data_dir())[0].ok


def test_a_marker_without_its_fence_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"docs/p.md:1: a runnable marker must be followed by a ```bash fence"):
        examples("<!-- runnable -->\n\n```bash\ntrue\n```\n", "p.md")
    with pytest.raises(ValueError, match="never closes"):
        examples("<!-- runnable -->\n```bash\ntrue\n", "p.md")


def test_the_data_placeholder_is_the_test_data(tmp_path: Path) -> None:
    page = "<!-- runnable -->\n```bash\ntest -f ../shared/data/arc_easy/test.jsonl\n```\n"
    assert run_page(examples(page, "p.md"), tmp_path, data_dir())[0].ok
