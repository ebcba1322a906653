"""Static checks run as part of the suite: ruff, mypy --strict and the import-linter
layering contracts must be clean, and no era is told apart by its name outside the era
policies."""

from __future__ import annotations

import ast
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


ERA_NAMES = {"modern", "legacy"}
# Where the eras' names are defined: the policies, and the revisions' table.
ERA_HOMES = {"protocol/eras.py", "protocol/versions.py"}


def era_name_comparisons(source: str) -> list[int]:
    """The lines of ``source`` that compare something with an era's name (``== "modern"``,
    ``!= "legacy"``, ``in ("modern", ...)``): a decision that belongs to a policy."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for operand in (node.left, *node.comparators):
            values = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
            strings = {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
            if strings & ERA_NAMES and strings <= ERA_NAMES:
                lines.append(node.lineno)
    return lines


def test_no_era_is_told_apart_by_its_name_outside_the_policies() -> None:
    """What differs between eras is asked of an EraPolicy (docs/design.md, "Where the eras
    live"). The option ``eras="dual" | "modern" | "legacy"`` is a user's word, checked
    against all three at once, so it is no era decision."""
    src = ROOT / "src" / "mcpkit"
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel not in ERA_HOMES:
            found += [f"{rel}:{line}" for line in era_name_comparisons(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_era_check_sees_each_form() -> None:
    assert era_name_comparisons('if era == "modern": pass') == [1]
    assert era_name_comparisons('x = "legacy" != client.era') == [1]
    assert era_name_comparisons('ok = era in ("modern", "legacy")') == [1]
    assert era_name_comparisons('ok = eras in ("dual", "modern", "legacy")') == []
    assert era_name_comparisons('span.set_attribute("mcpkit.era", "modern")') == []
