"""The built documentation site (``make docs`` → build/docs/html), served on loopback and opened in Chromium.

Navigation (index → user guide, index → API reference → a generated page), search (``search.html?q=sensitivity``
lists pages of this site) and one executed notebook page (a MyST-NB cell output is on it). Screenshots go to
``test-artifacts/docs-*.png``.
"""

from __future__ import annotations

import functools
import http.server
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from .conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.browser

SITE = ROOT / "build" / "docs" / "html"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass


@pytest.fixture(scope="module")
def site():
    """The URL of build/docs/html served by http.server on 127.0.0.1 (a free port), for this module's tests."""
    if not (SITE / "index.html").exists():
        pytest.fail(f"{SITE} has no index.html: build the site first with `make docs`")
    handler = functools.partial(_Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"docs-{name}.png"), full_page=True)


def test_navigation_from_the_index_to_the_guide_and_the_api_reference(site, page):
    page.goto(site)
    assert page.locator("h1").first.inner_text().strip().startswith("blowfish_nb")
    _shot(page, "index")

    page.locator("article a", has_text="User guide").first.click()
    page.wait_for_url("**/guide/index.html")
    assert page.locator("h1").first.inner_text().strip().startswith("User guide")
    page.locator("article a", has_text="Choosing a policy").first.click()
    page.wait_for_url("**/guide/policies.html")
    assert "threshold" in page.locator("article").inner_text()
    _shot(page, "guide")

    page.goto(site)
    page.locator("article a", has_text="API reference").first.click()
    page.wait_for_url("**/api/index.html")
    page.locator("article a", has_text="Policies").first.click()
    page.wait_for_url("**/api/generated/policy.html")
    # the autosummary table links to a generated page per object; follow the Policy class
    page.locator("article table a", has_text="policy.Policy").first.click()
    page.wait_for_url("**/blowfish_nb.policy.Policy.html*")  # the link carries the #anchor
    signature = page.locator("dt.sig").first.inner_text()
    assert "Policy" in signature, signature
    assert page.locator("dl.py.method").count() > 3  # the class's methods are documented on its page
    _shot(page, "api")


def test_search_finds_pages_of_this_site(site, page):
    page.goto(urljoin(site, "search.html?q=sensitivity"))
    # Sphinx lists results as it finds them (objects first, page texts after): wait for its summary line
    page.locator("#search-results p.search-summary", has_text="Search finished").wait_for(timeout=30_000)
    results = page.locator("#search-results ul.search li a")
    hrefs = [a.get_attribute("href") for a in results.all()]
    assert len(hrefs) >= 3, hrefs
    absolute = [urljoin(page.url, h) for h in hrefs]
    assert all(url.startswith(site) for url in absolute), absolute
    assert any("/guide/" in url for url in absolute), absolute
    _shot(page, "search")
    results.first.click()
    page.wait_for_load_state()
    assert page.url.startswith(site)
    assert "sensitiv" in page.locator("article").inner_text().lower()


def test_an_executed_notebook_page_shows_its_outputs(site, page):
    page.goto(urljoin(site, "guide/blowfish.html"))
    cells = page.locator("div.cell")
    assert cells.count() >= 2
    outputs = page.locator("div.cell_output")
    assert outputs.count() >= 2
    text = outputs.first.inner_text()
    # the first cell prints d_G(0, 7) under the line policy, then the guarantee the library states
    assert text.strip().splitlines()[0] == "7", text
    assert "e^(0.5·3)" in text, text
    _shot(page, "notebook")


class _Links(HTMLParser):
    """The ``href``/``src`` targets and the ``id``/``name`` anchors of one HTML page."""

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src") and not (tag == "link" and name == "href" and value.startswith("#")):
                self.targets.append(value)
            if name in ("id", "name"):
                self.anchors.add(value)


def _parse(path: Path) -> _Links:
    links = _Links()
    links.feed(path.read_text(encoding="utf-8", errors="replace"))
    return links


def test_every_internal_link_and_image_of_the_site_resolves():
    """A link check of the built site without a network: every relative ``href``/``src`` names a file of the
    build, and every ``#fragment`` an anchor on its page. External links are listed, not fetched (CI has no
    internet); they may only point at a web address, never at a local path outside the site."""
    if not (SITE / "index.html").exists():
        pytest.fail(f"{SITE} has no index.html: build the site first with `make docs`")
    # the pages of the site (``_static/`` holds the theme's assets, among them an unrendered Jinja macro file)
    pages = sorted(p for p in SITE.rglob("*.html") if "_static" not in p.relative_to(SITE).parts)
    parsed = {p: _parse(p) for p in pages}
    broken, external = [], set()
    for page, links in parsed.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme in ("http", "https", "mailto"):
                external.add(target)
                continue
            if parts.scheme or target.startswith("//"):
                if parts.scheme not in ("data", "javascript"):
                    broken.append(f"{page.relative_to(SITE)}: {target} (scheme {parts.scheme!r})")
                continue
            file = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if parts.path.endswith("/") or file.is_dir():
                file = file / "index.html"
            if not file.is_file() or SITE.resolve() not in file.resolve().parents:
                broken.append(f"{page.relative_to(SITE)}: {target}")
            elif parts.fragment and file.suffix == ".html":
                anchors = parsed[file].anchors if file in parsed else _parse(file).anchors
                if unquote(parts.fragment) not in anchors:
                    broken.append(f"{page.relative_to(SITE)}: {target} (no anchor)")
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:40])
    assert len(pages) > 50  # the whole site was checked, not an empty build
    # the reproduction pages show their figures (docs/_figures.py), which the check above found on disk
    for name in ("he2014", "haney2015", "anuarbek", "he2014_kmeans", "privacy_hunt"):
        images = [t for t in parsed[SITE / "reproductions" / f"{name}.html"].targets if t.endswith(f"{name}.png")]
        assert images, f"reproductions/{name}.html shows no figure"
