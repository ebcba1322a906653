"""The mutation gate's bookkeeping (scripts/mutation.py, docs/testing.md): one source for each
module's test selection, every listed file present, and the score table naming every module."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcpkit_mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_the_script_is_the_only_test_selection() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "mutmut" not in pyproject.get("tool", {}), "a [tool.mutmut] section would be a second selection"


def test_every_target_names_files_that_exist_and_the_acceptance_score() -> None:
    targets = _script().TARGETS
    for name, target in targets.items():
        assert (ROOT / target.source).is_file(), (name, target.source)
        assert target.tests, name
        for test in target.tests:
            assert (ROOT / test).is_file(), (name, test)
        assert target.min_score >= 0.98, name


def test_the_written_section_mutates_the_target_against_its_tests_only() -> None:
    script = _script()
    target = script.TARGETS["request_state"]
    section = tomllib.loads(script._pyproject_for(target))["tool"]["mutmut"]
    assert section["only_mutate"] == [target.source]
    assert section["pytest_add_cli_args_test_selection"] == list(target.tests)


def test_the_score_table_in_the_docs_lists_every_target() -> None:
    text = (ROOT / "docs" / "testing.md").read_text()
    table = re.search(r"```text\nmodule\s+mutants.*?\n(.*?)```", text, re.S)
    assert table is not None, "docs/testing.md lost the score table"
    rows = [line.split()[0] for line in table.group(1).splitlines() if line.strip() and not line.startswith("total")]
    assert rows == list(_script().TARGETS)
