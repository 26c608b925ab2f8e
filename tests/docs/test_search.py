"""The built site in a real browser (headless chromium, the report tests' fixture): Material's search box
finds the options and guides users look for."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.docs.support import build_site
from tests.report.conftest import browser  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def served_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site over HTTP on localhost (the search index is fetched by a web worker, which file:// refuses)."""
    site = build_site(tmp_path_factory.mktemp("site"))
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def _search(drv: Any, base: str, query: str) -> list[tuple[str, str]]:
    """Type ``query`` into the search box of the landing page; the results' (link, text)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    drv.get(base + "index.html")
    wait = WebDriverWait(drv, 30)
    box = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, "input.md-search__input")))
    box.click()
    box.send_keys(query)
    items = "li.md-search-result__item a"
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, items))
    return [(a.get_attribute("href") or "", a.text) for a in drv.find_elements(By.CSS_SELECTOR, items)]


def test_search_finds_seed_mode(browser: Any, served_site: str) -> None:  # noqa: F811
    hits = _search(browser, served_site, "seed_mode")
    pages = {href.split("#")[0].split("?")[0].removeprefix(served_site) for href, _ in hits}
    assert "how-to/leaderboard.html" in pages and "reference/overrides.html" in pages, pages
    assert any("seed_mode" in text for _, text in hits)


def test_search_finds_contamination(browser: Any, served_site: str) -> None:  # noqa: F811
    hits = _search(browser, served_site, "contamination")
    pages = {href.split("#")[0].split("?")[0].removeprefix(served_site) for href, _ in hits}
    assert "how-to/contamination.html" in pages, pages
    assert any("contamination" in text.lower() for _, text in hits)
