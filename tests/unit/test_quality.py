"""Static checks run as part of the suite: ruff, mypy --strict and the import-linter
layering contracts must be clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.paths import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_clean() -> None:
    proc = _run("ruff", "check", "src", "tests", "examples", "scripts", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_clean() -> None:
    proc = _run("mypy", "--strict", "src/mcpkit")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_layering_contracts_hold() -> None:
    """The layering rules of docs/design.md, as import-linter contracts in pyproject.toml."""
    lint_imports = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint_imports)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
