"""The cookbook (docs/cookbook.md): each program in examples/cookbook/ runs the way the
page says, over its real transport, exits 0 and prints exactly the transcript the page
shows; the code the page quotes is verbatim from the files; and each run shows the
behaviour it is there to teach (refusals, retries, progress, ...)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.timeout(180)

COOKBOOK = ROOT / "examples" / "cookbook"
PAGE = ROOT / "docs" / "cookbook.md"
EXAMPLES = ["files_server", "notes_db_server", "http_auth_server", "fanout_client", "long_task"]

#: What each run must show, whatever the page says (so a transcript edited to match a
#: broken run does not pass).
KEY_LINES = {
    "files_server": [
        "read_file('README.md')               -> ok: # Demo project",
        "'../secret.txt' is outside the client's roots",
        "'shortcut' is outside the client's roots",  # a symlink out of the root
        "'/etc/passwd' is outside the client's roots",
        "read_file('../team/glossary.txt')    -> ok: MCP: Model Context Protocol",  # after set_roots
        "McpError -32021: Missing required client capability",
    ],
    "notes_db_server": [
        "tool error: A note titled 'shopping' already exists",
        "search_notes(query=\"x' OR '1'='1\")\n    -> []",  # injected SQL is just text
        "search_notes(query='_')\n    -> []",  # a LIKE wildcard is matched literally
        "read notes://holiday -> McpError -32602: No note titled 'holiday'",
        "lifespan: opened notes.db (0 notes)\nlifespan: closed notes.db",
        "lifespan: opened notes.db (2 notes)",  # the second process sees the first one's notes
    ],
    "http_auth_server": [
        "no token:\n  could not connect: McpError -32603 (HTTP 401)",
        "was refused: HTTP 401 (invalid_client)",
        "refund -> refused: McpError -32603 (HTTP 403)",
        "refund -> refunded INV-1 (120.00) for billing-admin",
        "billing-admin with scopes invoices:refund mcp",  # the step-up added the scope
    ],
    "fanout_client": [
        "(music: retried 1x, then answered)",
        "(missing films: marked down after 3 attempts: Request timed out)",
        "(missing games: did not start: ConnectionClosed: cannot reach the catalogue database)",
        "   14.00  Dune (soundtrack)  [music]",
        "films events: attempt=4 retry=2 timeout=3",
    ],
    "long_task": [
        "started a task: working",
        "result: 306 orders in 3 months",
        "wait() raised McpError -32800: The task was cancelled",
        "status now: cancelled",
        "is_error=True: months must be between 1 and 24, not 99.",
        "    progress 4/5: crunching month 5 of 5\nresult: 515 orders in 5 months",  # outlived its 1 s timeout
    ],
}

#: Lines whose count depends on timing: a task's status messages, seen by polling. The
#: transcript lists all of them; a run shows them in that order, possibly missing some.
POLLED = re.compile(r"^    working: ")

_BLOCK = re.compile(
    r"<!--\s*not-run:\s*(?P<kind>the output|an excerpt) of examples/cookbook/(?P<name>\w+)\.py[^>]*-->\s*\n"
    r"(?P<indent>[ \t]*)```(?P<lang>\w+)\n(?P<body>.*?)^(?P=indent)```",
    re.DOTALL | re.MULTILINE,
)


def page_blocks(kind: str) -> dict[str, list[str]]:
    """The page's transcripts (``"the output"``) or quoted code (``"an excerpt"``), by example."""
    found: dict[str, list[str]] = {}
    for m in _BLOCK.finditer(PAGE.read_text(encoding="utf-8")):
        if m["kind"] == kind:
            found.setdefault(m["name"], []).append(textwrap.dedent(m["body"]))
    return found


def run(name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python examples/cookbook/NAME.py``, from another directory, as a user would run it."""
    return subprocess.run(
        [sys.executable, str(COOKBOOK / f"{name}.py")],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=150,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_prints_its_transcript(name: str, tmp_path: Path) -> None:
    proc = run(name, tmp_path)
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for line in KEY_LINES[name]:
        assert line in proc.stdout, f"missing from the output: {line!r}\n{proc.stdout}"
    [expected] = page_blocks("the output")[name]
    want, got = expected.splitlines(), proc.stdout.splitlines()
    assert [x for x in got if not POLLED.match(x)] == [x for x in want if not POLLED.match(x)], proc.stdout
    polled = [x for x in got if POLLED.match(x)]
    assert polled == [x for x in want if x in polled], f"status messages out of order: {polled}"
    assert not any(POLLED.match(x) for x in want) or polled, "no status message was seen at all"
    assert list(tmp_path.iterdir()) == [], "the example left files behind"


def test_the_page_quotes_the_files_verbatim() -> None:
    excerpts = page_blocks("an excerpt")
    assert sorted(excerpts) == sorted(EXAMPLES), "each example should have an excerpt on the page"
    for name, blocks in excerpts.items():
        source = (COOKBOOK / f"{name}.py").read_text(encoding="utf-8")
        for block in blocks:
            quoted = any(textwrap.indent(block, " " * indent) in source for indent in range(0, 17, 4))  # maybe dedented
            assert quoted, f"docs/cookbook.md quotes {name}.py, but not as it is now:\n{block}"


def test_every_example_is_on_the_page_and_says_how_to_run_it() -> None:
    assert sorted(p.stem for p in COOKBOOK.glob("*.py")) == sorted(EXAMPLES)
    assert sorted(page_blocks("the output")) == sorted(EXAMPLES)
    page = PAGE.read_text(encoding="utf-8")
    for name in EXAMPLES:
        source = (COOKBOOK / f"{name}.py").read_text(encoding="utf-8")
        assert f"python examples/cookbook/{name}.py" in source, f"{name}.py: its docstring should say how to run it"
        assert f"python examples/cookbook/{name}.py" in page, f"docs/cookbook.md should say how to run {name}.py"
        assert len(source.splitlines()) <= 230, f"{name}.py is long for an example people read"
    assert "cookbook.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "cookbook.md" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


def test_examples_type_check() -> None:
    """People copy these: they pass ``mypy --strict`` as the library does."""
    paths = [str(COOKBOOK / f"{name}.py") for name in EXAMPLES]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *paths], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
