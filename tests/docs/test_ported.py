"""The ports in examples/ported/ of other SDKs' examples, which the migration guides
(docs/migrate-fastmcp.md, docs/migrate-official-sdk.md) are written from: each runs as
its docstring says and does what the original did; the code and output the guides
quote are what the files hold and print now."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.paths import ROOT

PORTED = ROOT / "examples" / "ported"
GUIDES = [ROOT / "docs" / "migrate-fastmcp.md", ROOT / "docs" / "migrate-official-sdk.md"]
PROGRAMS = ["mount_example.py", "weather_structured.py", "fastmcp_testing_demo/server.py"]

_BLOCK = re.compile(
    r"<!--\s*not-run:\s*(?P<kind>the output|an excerpt) of examples/ported/(?P<path>[\w/.]+\.py)(?P<args>[^,>]*)[^>]*-->\s*\n"
    r"(?P<indent>[ \t]*)```(?P<lang>\w+)\n(?P<body>.*?)^(?P=indent)```",
    re.DOTALL | re.MULTILINE,
)
_TIMESTAMP = re.compile(r'"timestamp": "[^"]+"')


def quoted(kind: str) -> list[tuple[Path, str, str, str]]:
    """(guide, path, arguments, block) for each block of that kind in the guides."""
    found = []
    for guide in GUIDES:
        for m in _BLOCK.finditer(guide.read_text(encoding="utf-8")):
            if m["kind"] == kind:
                found.append((guide, m["path"], m["args"].strip(), textwrap.dedent(m["body"])))
    return found


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTHONWARNINGS"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-W", "error", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
        stdin=subprocess.DEVNULL,
    )


def test_the_ported_testing_demo_passes_its_18_tests() -> None:
    """FastMCP's testing_demo: its 18 tests, ported, pass against the ported server."""
    demo = PORTED / "fastmcp_testing_demo"
    proc = run(["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist"], demo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b18 passed\b", proc.stdout), proc.stdout


def test_the_ported_mount_example_lists_the_prefixed_names_and_serves(tmp_path: Path) -> None:
    proc = run([str(PORTED / "mount_example.py")], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  - weather_get_weather_forecast: Get the weather forecast for a location." in proc.stdout
    assert "  - Imported from news app: ['news://news/headlines']" in proc.stdout
    assert 'Weather data from prefixed URI: {"temperature":72,' in proc.stdout


@pytest.mark.parametrize("args", [[], ["--schemas"]], ids=["results", "schemas"])
def test_the_ported_weather_example_runs(args: list[str], tmp_path: Path) -> None:
    proc = run([str(PORTED / "weather_structured.py"), *args], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if args:
        assert proc.stdout.count("Tool: ") == 6, proc.stdout
        assert "Output Schema: None" not in proc.stdout  # every tool here declares one
    else:
        assert '"result": 72.5' in proc.stdout  # a float is wrapped
        assert '"temp_c": 22.5' in proc.stdout  # a TypedDict is not


@pytest.mark.parametrize(("guide", "path", "args", "block"), quoted("the output"), ids=lambda v: str(v)[-30:])
def test_the_guides_show_what_the_ports_print(guide: Path, path: str, args: str, block: str, tmp_path: Path) -> None:
    proc = run([str(PORTED / path), *args.split()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = _TIMESTAMP.sub('"timestamp": "…"', proc.stdout)
    assert block.strip("\n") in got, f"{guide.name} shows output of {path} {args} that it no longer prints:\n{block}\n---\n{got}"


def test_the_guides_quote_the_ports_verbatim() -> None:
    excerpts = quoted("an excerpt")
    assert {path for _, path, _, _ in excerpts} >= {*PROGRAMS, "fastmcp_testing_demo/tests/test_server.py"}
    for guide in GUIDES:
        assert any(g == guide for g, _, _, _ in excerpts), f"{guide.name} quotes no port"
    for guide, path, _, block in excerpts:
        source = (PORTED / path).read_text(encoding="utf-8")
        assert any(textwrap.indent(block, " " * n) in source for n in range(0, 17, 4)), (
            f"{guide.name} quotes examples/ported/{path}, but not as it is now:\n{block}"
        )


def test_the_ported_programs_type_check() -> None:
    """People copy these: they pass ``mypy --strict`` as the library does."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *(str(PORTED / p) for p in PROGRAMS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
