"""Every Python snippet of every docs page (docs/**/*.md) and of README.md runs, and prints
what the docs say; every other code block says why it is not run.

Conventions (see docs/errors.md):

* each ```python block is a complete program. It is written to a file in a fresh
  temporary directory and run with this interpreter, warnings as errors, stdin an empty pipe;
  it must exit 0;
* a ```output block that follows a ```python block (with only prose in between) is the
  exact stdout that program must print;
* every other fenced block (sh, text, toml, a ```py or ```python block that must not run)
  has ``<!-- not-run: the reason -->`` on the line before it (blank lines may come between);
* ``<!-- file: NAME -->`` before a ```python block saves it as NAME beside every other
  block of that page instead of running it alone: it is a module or a server that the
  page's other blocks import or spawn, and they run it;
* README.md: its first Python block (the server) is also saved as ``weather.py``, the
  file its client block spawns;
* fences may be indented (inside an admonition or a list); the indent is removed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mcpkit
from support.paths import ROOT

DOCS_DIR = ROOT / "docs"
DOCS = DOCS_DIR / "errors.md"
HTTP_DOC = DOCS_DIR / "http.md"
README = ROOT / "README.md"
TIMEOUT = 120  # a hang guard only: a loaded machine runs a snippet of several processes slowly

#: Every page of the site (docs/_ext holds build helpers, not pages).
PAGES = sorted(p for p in DOCS_DIR.rglob("*.md") if "_ext" not in p.relative_to(DOCS_DIR).parts)

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.DOTALL | re.MULTILINE
)
_MARK = re.compile(r"<!--\s*(?P<kind>not-run|file):(?P<value>[^>]*?)-->")


def _page_id(doc: Path, line: int) -> str:
    name = doc.relative_to(DOCS_DIR).as_posix() if doc.is_relative_to(DOCS_DIR) else doc.name
    return f"{name}:{line}"


@dataclasses.dataclass
class Fence:
    """One fenced code block of a page, with the marker on the line before it, if any."""

    doc: Path
    line: int
    lang: str
    body: str
    not_run: str | None = None  # the reason, from <!-- not-run: reason -->
    file: str | None = None  # the file name, from <!-- file: NAME -->

    @property
    def id(self) -> str:
        return _page_id(self.doc, self.line)


def fences(doc: Path) -> list[Fence]:
    """Every fenced block of ``doc``, in order."""
    text = doc.read_text(encoding="utf-8")
    found: list[Fence] = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip().rsplit("\n", 1)[-1].strip()
        fence = Fence(doc, text.count("\n", 0, m.start()) + 1, m["lang"].lower(), textwrap.dedent(m["body"]))
        mark = _MARK.fullmatch(before)
        if mark is not None:
            setattr(fence, mark["kind"].replace("-", "_"), mark["value"].strip())
        found.append(fence)
    return found


@dataclasses.dataclass
class Block:
    doc: Path
    line: int
    code: str
    expected: str | None = None
    file: str | None = None  # saved as this file for the page's other blocks, not run alone

    @property
    def id(self) -> str:
        return _page_id(self.doc, self.line)


def python_blocks(doc: Path) -> list[Block]:
    """The ```python blocks of ``doc`` that run, each with the ```output block that follows it."""
    blocks: list[Block] = []
    last: Block | None = None
    for fence in fences(doc):
        if fence.lang == "python" and fence.not_run is None:
            last = Block(doc, fence.line, fence.body, file=fence.file)
            blocks.append(last)
        elif fence.lang == "output":
            assert last is not None, f"{fence.id}: an output block must follow a python block that runs"
            assert last.expected is None, f"{fence.id}: a python block may have only one output block"
            last.expected = fence.body
            last = None
        else:
            last = None
    return blocks


def page_files(doc: Path) -> dict[str, str]:
    """The blocks of ``doc`` marked ``<!-- file: NAME -->``, by file name."""
    return {f.file: f.body for f in fences(doc) if f.file}


def run_program(code: str, cwd: Path, name: str = "snippet.py") -> subprocess.CompletedProcess[str]:
    path = cwd / name
    path.write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [sys.executable, "-W", "error", str(path)],
        cwd=cwd,
        env=env,
        input="",  # stdin is a pipe that is closed at once
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
    )


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def check(block: Block, proc: subprocess.CompletedProcess[str]) -> None:
    where = f"{block.id} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, where
    if block.expected is not None:
        assert _lines(proc.stdout) == _lines(block.expected), f"{block.id}: output differs\n{where}"


DOC_BLOCKS = python_blocks(DOCS)
HTTP_BLOCKS = python_blocks(HTTP_DOC)
README_BLOCKS = python_blocks(README)
#: The runnable blocks of every other page (errors.md and http.md have their own tests),
#: and the blocks that are files those import or spawn.
PAGE_BLOCKS = [b for page in PAGES if page not in (DOCS, HTTP_DOC) for b in python_blocks(page) if b.file is None]
FILE_BLOCKS = [b for page in PAGES for b in python_blocks(page) if b.file is not None]


@pytest.mark.parametrize("block", DOC_BLOCKS, ids=[b.id for b in DOC_BLOCKS])
def test_errors_md_snippet(block: Block, tmp_path: Path) -> None:
    check(block, run_program(block.code, tmp_path))


@pytest.mark.parametrize("block", HTTP_BLOCKS, ids=[b.id for b in HTTP_BLOCKS])
def test_http_md_snippet(block: Block, tmp_path: Path) -> None:
    # ```py blocks on that page are display-only (they serve forever); ```python blocks run.
    check(block, run_program(block.code, tmp_path))


def test_http_md_snippets_are_checked() -> None:
    assert len(HTTP_BLOCKS) >= 2
    assert all(b.expected is not None for b in HTTP_BLOCKS), "every runnable http.md snippet shows its output"


@pytest.mark.parametrize("index", range(len(README_BLOCKS)), ids=[b.id for b in README_BLOCKS])
def test_readme_snippet(index: int, tmp_path: Path) -> None:
    # The client snippet spawns weather.py: the README's first block, the server.
    server = README_BLOCKS[0]
    assert "Server(" in server.code, "README: the first Python block should be the server that later blocks spawn"
    (tmp_path / "weather.py").write_text(server.code, encoding="utf-8")
    block = README_BLOCKS[index]
    # The server block serves stdio until stdin closes; with stdin closed it exits at once.
    check(block, run_program(block.code, tmp_path))


@pytest.mark.parametrize("block", PAGE_BLOCKS, ids=[b.id for b in PAGE_BLOCKS])
def test_page_snippet(block: Block, tmp_path: Path) -> None:
    for name, code in page_files(block.doc).items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    check(block, run_program(block.code, tmp_path))


def test_every_code_block_is_run_or_says_why_not() -> None:
    """A fenced block is a ```python block that runs, the ```output it must print, or
    marked ``<!-- not-run: reason -->``; nothing is silently left unchecked."""
    assert len(PAGES) >= 20, [p.name for p in PAGES]
    problems = []
    for page in [*PAGES, README]:
        python_blocks(page)  # an ```output block must follow a python block that runs
        for fence in fences(page):
            if fence.not_run is not None:
                if not fence.not_run:
                    problems.append(f"{fence.id}: not-run needs a reason")
                if fence.lang == "output":
                    problems.append(f"{fence.id}: an output block is checked, never marked not-run")
            elif fence.lang not in ("python", "output"):
                problems.append(f"{fence.id}: a ```{fence.lang or '(no language)'} block without <!-- not-run: reason -->")
            if fence.file is not None:
                users = [b for b in python_blocks(page) if b.file is None and Path(fence.file).stem in b.code]
                if fence.lang != "python" or fence.not_run is not None or not users:
                    problems.append(f"{fence.id}: a file block must be a python block that another block uses")
    assert not problems, "\n".join(problems)


def test_guides_run_their_examples() -> None:
    """Each getting-started page, how-to guide and migration guide has runnable examples,
    and each of them shows its output or asserts something."""
    guides = [p for p in PAGES if p.parent.name in ("start", "howto") or p.name.startswith("migrate-")]
    assert len(guides) >= 9, [p.name for p in guides]
    for page in guides:
        blocks = python_blocks(page)
        assert blocks, f"{page.name}: no runnable example"
        unchecked = [b.id for b in blocks if b.file is None and b.expected is None and "assert " not in b.code]
        assert not unchecked, f"snippets that neither show their output nor assert anything: {unchecked}"


def test_readme_client_spawns_the_server_block() -> None:
    assert any("weather.py" in b.code for b in README_BLOCKS[1:]), "README: no block spawns weather.py any more"


def test_every_errors_md_snippet_is_checked() -> None:
    assert len(DOC_BLOCKS) >= 10
    unchecked = [b.id for b in DOC_BLOCKS if b.expected is None and "assert " not in b.code]
    assert not unchecked, f"snippets that neither show their output nor assert anything: {unchecked}"


def test_errors_md_covers_the_error_api_and_codes() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in ("McpError", "RequestTimeout", "ConnectionClosed", "ToolError", "HttpError", "flatten_text",
                 "CallToolResult", "ClientOptions", "RequestOptions", "expose_internal_errors", "mask_tool_errors",
                 "max_error_text"):
        assert re.search(rf"`(mcpkit\.)?{name}\b", text), name
        assert name in mcpkit.__all__ or name in {"expose_internal_errors", "mask_tool_errors", "max_error_text"}, name
    for code in (-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32800, -32020, -32021, -32022, -32002):
        assert re.search(rf"^\| `{code}`", text, re.MULTILINE), f"codes table lacks {code}"
    for constant in ("PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
                     "REQUEST_TIMEOUT", "REQUEST_CANCELLED"):
        code = getattr(mcpkit, constant)
        assert re.search(rf"^\| `{code}` \| `{constant}` \|", text, re.MULTILINE), f"codes table: {code} should be {constant}"


def test_snippets_have_no_undefined_or_unused_names(tmp_path: Path) -> None:
    paths = []
    for i, block in enumerate(DOC_BLOCKS + HTTP_BLOCKS + PAGE_BLOCKS + FILE_BLOCKS):
        path = tmp_path / f"snippet_{i}_{block.doc.stem}_line_{block.line}.py"
        path.write_text(block.code, encoding="utf-8")
        paths.append(str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F", *paths],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
