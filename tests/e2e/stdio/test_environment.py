"""What a spawned server's environment is (issue 25): ``StdioTransport(env={...})`` merges
the given variables over a safe part of ours (``PATH``, ``HOME``, the locale, ...), so that
``python3`` resolves as it does for us; ``inherit_env=False`` passes exactly what is given;
``inherit_env=True`` all of ours. Over real processes (tests/support/servers/environment.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcpkit import Client, StdioTransport, TextContent
from mcpkit.transports.stdio.process import safe_environment
from support.paths import SERVERS

SCRIPT = str(SERVERS / "environment.py")


async def seen(transport: StdioTransport, tool: str) -> str:
    async with Client(transport) as client:
        block = (await client.call_tool(tool)).content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.fixture
def our_python3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``python3`` first on our PATH that runs this interpreter (as a virtualenv's would),
    and a secret in our environment that no server should see unless it inherits everything."""
    wrapper = tmp_path / "bin" / "python3"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MCPKIT_TEST_SECRET", "do not pass on")
    return wrapper


async def test_env_is_merged_over_a_safe_default_so_python3_resolves_as_ours(our_python3: Path) -> None:
    transport = StdioTransport(["python3", SCRIPT], env={"GREETING": "hello"}, stderr="capture")
    assert await seen(transport, "interpreter") == sys.executable  # found through our PATH, not /usr/bin
    env = json.loads(await seen(StdioTransport(["python3", SCRIPT], env={"GREETING": "hello"}), "environment"))
    assert env["GREETING"] == "hello"
    assert env["PATH"] == os.environ["PATH"]
    assert env["HOME"] == os.environ["HOME"]
    assert "MCPKIT_TEST_SECRET" not in env
    assert set(safe_environment()) <= set(env)


async def test_given_variables_win_over_the_inherited_ones(our_python3: Path) -> None:
    env = json.loads(await seen(StdioTransport(["python3", SCRIPT], env={"HOME": "/nowhere"}), "environment"))
    assert env["HOME"] == "/nowhere"


async def test_inherit_env_false_passes_exactly_the_given_environment(our_python3: Path) -> None:
    transport = StdioTransport([sys.executable, SCRIPT], env={"GREETING": "hi"}, inherit_env=False)
    env = json.loads(await seen(transport, "environment"))
    assert env["GREETING"] == "hi"
    assert "PATH" not in env
    assert "HOME" not in env
    assert "MCPKIT_TEST_SECRET" not in env


async def test_inherit_env_true_passes_all_of_ours_and_without_env_nothing_changes(our_python3: Path) -> None:
    transport = StdioTransport([sys.executable, SCRIPT], env={"GREETING": "hi"}, inherit_env=True)
    merged = json.loads(await seen(transport, "environment"))
    assert merged["MCPKIT_TEST_SECRET"] == "do not pass on"
    assert merged["GREETING"] == "hi"
    ours = json.loads(await seen(StdioTransport([sys.executable, SCRIPT]), "environment"))
    assert ours["MCPKIT_TEST_SECRET"] == "do not pass on"


def test_exported_shell_functions_are_never_passed_on() -> None:
    kept = safe_environment({"PATH": "/bin", "SHELL": "() { :; }; echo pwned", "LC_ALL": "C.UTF-8", "OTHER": "x"})
    assert kept == {"PATH": "/bin", "LC_ALL": "C.UTF-8"}
