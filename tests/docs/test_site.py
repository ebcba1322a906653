"""The documentation site: it builds with ``mkdocs build --strict`` (no broken link,
anchor or reference, no page left out of the nav), its API reference covers every public
name, and the built site renders in a real headless browser (Debian's Chromium, driven
over the Chrome DevTools Protocol) with its navigation and without console errors.

Nothing here skips: without mkdocs (the test extra installs it) or Chromium
(``apt-get install chromium``; ``.ci/run`` installs it) the tests fail and say why.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcpkit
from support.browser import Browser
from support.paths import ROOT
from support.system import require

REFERENCE = ROOT / "docs" / "reference"


# --- (a) the strict build ----------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict`` into a temporary directory."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    assert "WARNING" not in proc.stderr, proc.stderr
    return out


def test_site_builds_strictly(site: Path) -> None:
    for page in ("index.html", "start/server/index.html", "migrate-official-sdk/index.html", "reference/server/index.html"):
        assert (site / page).is_file(), page


def test_reference_documents_every_public_name(site: Path) -> None:
    """Every name of ``mcpkit.__all__`` has a ``::: mcpkit.Name`` entry and an anchor."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(REFERENCE.glob("*.md")))
    entries = re.findall(r"^::: mcpkit\.(\w+)\s*$", text, re.MULTILINE)
    assert sorted(entries) == sorted(set(entries)), "a name is documented twice"
    assert set(entries) == set(mcpkit.__all__), {
        "missing": set(mcpkit.__all__) - set(entries),
        "not public": set(entries) - set(mcpkit.__all__),
    }
    html = "\n".join(p.read_text(encoding="utf-8") for p in (site / "reference").rglob("index.html"))
    for name in mcpkit.__all__:
        assert f'id="mcpkit.{name}"' in html, f"no anchor for mcpkit.{name} in the built reference"


def test_every_public_name_has_a_docstring() -> None:
    """The reference is made of docstrings: every name of ``mcpkit.__all__``, and every
    public method and property of its classes, has one (``#:`` comments count for
    constants, as in the reference)."""
    import griffe

    roles = griffe.load_extensions(str(ROOT / "docs" / "_ext" / "sphinx_roles.py") + ":SphinxRoles")
    package = griffe.load("mcpkit", search_paths=[str(ROOT / "src")], extensions=roles, resolve_aliases=True)
    missing = []
    for name in mcpkit.__all__:
        obj = package[name]
        obj = obj.final_target if obj.is_alias else obj
        members = [(f"{name}.{m}", v) for m, v in obj.members.items() if not m.startswith("_")] if obj.is_class else []
        for label, item in [(name, obj), *members]:
            item = item.final_target if item.is_alias else item
            if label != name and not (item.is_function or "property" in item.labels):
                continue  # fields are described in their class's docstring
            if item.docstring is None or len(item.docstring.value.strip()) < 10:
                missing.append(label)
    assert not missing, f"public names without a docstring: {missing}"


class _Prose(html.parser.HTMLParser):
    """A built page's article: its text outside links and code, and the links whose text
    names a page by path (``docs/auth.md``), each with its target."""

    SKIPPED = frozenset({"a", "code", "pre"})

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # inside <article> while > 0
        self.skipping: list[str] = []
        self.href: str | None = None
        self.text: list[str] = []
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article" or self.depth:
            self.depth += tag == "article"
            if tag in self.SKIPPED:
                self.skipping.append(tag)
            if tag == "a":
                self.href = dict(attrs).get("href") or ""
                self.links.append((self.href, ""))

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= tag == "article"
            if tag in self.SKIPPED and tag in self.skipping:
                del self.skipping[len(self.skipping) - 1 - self.skipping[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        if not self.depth:
            return
        if not self.skipping:
            self.text.append(data)
        elif self.skipping[-1] == "a" and self.links:
            href, text = self.links[-1]
            self.links[-1] = (href, text + data)


def test_page_references_in_docstrings_are_links(site: Path) -> None:
    """Docstrings name guide pages by path ("(docs/auth.md)"); on the API reference each is
    a link to the page (docs/_ext/doc_links.py), to its section when a title follows, and
    none is left as plain text."""
    linked = 0
    for page in [site / "api" / "index.html", *sorted((site / "reference").rglob("index.html"))]:
        prose = _Prose()
        prose.feed(page.read_text(encoding="utf-8"))
        plain = re.findall(r"docs/[\w/-]+\.md", "".join(prose.text))
        assert not plain, f"{page.relative_to(site)}: plain-text page references {plain}"
        for href, text in prose.links:
            named = re.fullmatch(r'docs/([\w/-]+)\.md(?:,\s+"[^"]+")?', " ".join(text.split()))
            if named is None:
                continue
            linked += 1
            path, _, anchor = href.partition("#")
            target = (page.parent / path / "index.html").resolve()
            assert target == (site / named[1] / "index.html").resolve(), f"{page.relative_to(site)}: {text!r} -> {href}"
            if anchor:
                assert f'id="{anchor}"' in target.read_text(encoding="utf-8"), f"{text!r}: no #{anchor} in {href}"
    assert linked >= 40, f"only {linked} page references linked in the API reference"


# --- (c) the site in a browser -------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site, served on 127.0.0.1; yields its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def tab() -> Iterator[tuple[Browser, str]]:
    """A page of a fresh headless Chromium, with console and log events enabled."""
    executable = require("chromium")  # Debian's, from scripts/setup_tests.py
    browser = Browser(executable)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable", session=session)
        yield browser, session
    finally:
        browser.close()


_PROBE = """JSON.stringify({
  title: document.title,
  h1: (document.querySelector("article h1") || {}).textContent || "",
  navLinks: document.querySelectorAll(".md-sidebar--primary .md-nav__link").length,
  navWidth: (document.querySelector(".md-sidebar--primary") || document.body).getBoundingClientRect().width,
  navText: (document.querySelector(".md-sidebar--primary") || {}).innerText || "",
  header: !!document.querySelector(".md-header"),
  search: !!document.querySelector(".md-search__input"),
  styled: getComputedStyle(document.body).fontFamily !== "",
  articleText: (document.querySelector("article") || {}).innerText || "",
  apiObjects: document.querySelectorAll(".doc.doc-object").length,
  anchors: Array.from(document.querySelectorAll("[id^='mcpkit.']")).map(e => e.id),
})"""


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails'].get('text')} {params['exceptionDetails'].get('exception')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
            found.append(f"console.{params['type']}: {[a.get('value', a.get('description')) for a in params['args']]}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            found.append(f"log {params['entry']['level']}: {params['entry']['text']} {params['entry'].get('url', '')}")
    return found


def _open(tab: tuple[Browser, str], url: str) -> dict[str, Any]:
    browser, session = tab
    browser.events.clear()
    browser.send("Page.navigate", {"url": url}, session=session)
    browser.wait_for("Page.loadEventFired")
    # Let Material's bundle and the search worker start, so that their errors show too.
    probe = {"expression": "new Promise(r => setTimeout(r, 300)).then(() => " + _PROBE + ")", "awaitPromise": True}
    value = browser.send("Runtime.evaluate", {**probe, "returnByValue": True}, session=session)["result"]["value"]
    page: dict[str, Any] = json.loads(value)
    errors = _errors(browser.events)
    assert not errors, f"{url}: console errors: {errors}"
    assert page["header"], page
    assert page["search"], page
    assert page["styled"], page
    assert page["navWidth"] > 100, f"{url}: the navigation is not shown: {page}"
    assert page["navLinks"] >= 20, f"{url}: the navigation is not shown: {page}"
    for section in ("Getting started", "Concepts", "How-to guides", "API reference"):
        assert section in page["navText"], f"{url}: the navigation lacks {section!r}"
    return page


@pytest.mark.timeout(120)
def test_landing_page_renders(served: str, tab: tuple[Browser, str]) -> None:
    page = _open(tab, served)
    assert page["title"].startswith("mcpkit")
    assert "Both protocol eras" in page["articleText"] or "both protocol eras" in page["articleText"]


@pytest.mark.timeout(120)
def test_a_guide_renders(served: str, tab: tuple[Browser, str]) -> None:
    page = _open(tab, served + "migrate-official-sdk/")
    assert "official" in page["h1"].lower()
    assert "MCPServer" in page["articleText"]
    assert "Server(" in page["articleText"]


@pytest.mark.timeout(120)
def test_a_reference_page_renders(served: str, tab: tuple[Browser, str]) -> None:
    page = _open(tab, served + "reference/client/")
    assert page["h1"].startswith("Client")
    assert page["apiObjects"] >= 3
    for anchor in ("mcpkit.Client", "mcpkit.Client.call_tool", "mcpkit.ClientOptions", "mcpkit.RequestOptions"):
        assert anchor in page["anchors"], anchor
    assert "RequestTimeout" in page["articleText"]


_CODE_LAYOUT = """JSON.stringify((() => {
  const blocks = Array.from(document.querySelectorAll("article pre > code"));
  const first = blocks[0], box = first ? first.getBoundingClientRect() : null;
  return {
    width: innerWidth,
    height: innerHeight,
    pageScrollWidth: document.documentElement.scrollWidth,
    pageClientWidth: document.documentElement.clientWidth,
    blocks: blocks.length,
    overflowing: blocks.filter(c => c.scrollWidth > c.clientWidth)
      .map(c => ({scrollWidth: c.scrollWidth, clientWidth: c.clientWidth, text: c.textContent.slice(0, 60)})),
    first: box && {left: box.left, right: box.right, top: box.top, bottom: box.bottom,
                   scrollHeight: first.scrollHeight, clientHeight: first.clientHeight},
  };
})())"""

#: The home page and long pages with the widest code: examples, outputs, API signatures.
WIDE_CODE_PAGES = ("", "cookbook/", "auth/", "http/", "deploy/", "reference/server/")


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("width", "height", "mobile"), [(1280, 800, False), (1440, 900, False), (390, 844, True)], ids=["1280", "1440", "390"]
)
def test_code_blocks_fit_the_page(served: str, tab: tuple[Browser, str], width: int, height: int, mobile: bool) -> None:
    """At common widths (a laptop, a desktop, a phone) no code block scrolls sideways: long
    lines wrap (docs/css/mcpkit.css), and the page itself does not scroll sideways. The home
    page's first example is whole, and on a laptop or desktop in the first screen."""
    browser, session = tab
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    browser.send("Emulation.setDeviceMetricsOverride", metrics, session=session)
    try:
        for path in WIDE_CODE_PAGES:
            browser.events.clear()
            browser.send("Page.navigate", {"url": served + path}, session=session)
            browser.wait_for("Page.loadEventFired")
            expression = {"expression": _CODE_LAYOUT, "returnByValue": True}
            page: dict[str, Any] = json.loads(browser.send("Runtime.evaluate", expression, session=session)["result"]["value"])
            where = f"{path or 'the home page'} at {width} px"
            assert page["width"] == width, page
            assert page["blocks"] >= 3, f"{where}: {page['blocks']} code blocks"
            assert not page["overflowing"], f"{where}: code blocks scroll sideways: {page['overflowing']}"
            assert page["pageScrollWidth"] <= page["pageClientWidth"], f"{where}: the page scrolls sideways: {page}"
            if path == "":
                first, cut = page["first"], f"{where}: the first example is cut off: {page['first']}"
                assert first["left"] >= 0, cut
                assert first["right"] <= width, cut
                assert first["scrollHeight"] <= first["clientHeight"], cut
                if not mobile:  # on a laptop or a desktop, in the first screen
                    assert first["top"] > 0, f"{where}: the first example is not on screen: {first}"
                    assert first["bottom"] <= height, f"{where}: the first example is not on screen: {first}"
    finally:
        browser.send("Emulation.clearDeviceMetricsOverride", session=session)
