"""The package face (src/mcpkit/__init__.py) keeps its public names in one table,
``_PUBLIC``; the block type checkers read names exactly the same ones, each from the
module the table gives, re-exported explicitly (``X as X``), so the two cannot drift."""

from __future__ import annotations

import ast

import mcpkit
from support.paths import ROOT


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse((ROOT / "src" / "mcpkit" / "__init__.py").read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    names: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        assert node.level == 1, ast.dump(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name} is not re-exported explicitly ({alias.name} as {alias.name})"
            assert alias.name not in names, f"{alias.name} imported twice"
            names[alias.name] = f".{node.module}"
    return names


def test_the_type_checkers_block_names_the_table() -> None:
    assert _type_checking_imports() == mcpkit._EXPORTS


def test_all_is_the_table_and_names_each_once() -> None:
    table = [name for modules in mcpkit._PUBLIC.values() for names in modules.values() for name in names]
    assert len(table) == len(set(table))
    assert mcpkit.__all__ == ["__version__", *table]
