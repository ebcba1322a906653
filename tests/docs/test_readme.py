"""The README's commands do what it says: the quick start's mcpkit commands exit as it shows,
and its test command is the one CI runs."""

from __future__ import annotations

import json
import shlex

import pytest

from support.cli import mcpkit
from support.paths import ROOT

pytestmark = pytest.mark.timeout(60)


def test_the_readme_quick_start() -> None:
    """The README's commands against the walkthrough server, with the exit codes it shows."""
    readme = (ROOT / "README.md").read_text()
    lines = [line for line in readme.splitlines() if line.startswith(".venv/bin/mcpkit ")]
    assert len(lines) == 5, lines
    expected = {"list": 0, "success": 0, "throw_error": 1, "slow": 0}
    for line in lines:
        command = line.split("   #")[0].split("; echo")[0]
        args = shlex.split(command)[1:]
        proc = mcpkit(*args)
        want = 3 if "--timeout" in args else expected[args[2] if args[0] == "call" else "list"]
        assert proc.returncode == want, (line, proc.stdout, proc.stderr)
        if "success" in args:
            assert proc.stdout == "Success: hello\n"
        if "--timeout" in args:
            assert json.loads(proc.stdout)["exitCode"] == 3


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if ".venv/bin/python -m pytest" in line)
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
