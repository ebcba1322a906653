"""docs/design.md's map of the tree stays true: it names every module."""

from __future__ import annotations

from pathlib import Path

from support.paths import ROOT


def test_design_doc_names_every_module() -> None:
    """docs/design.md's tree stays true: every module outside the HTTP transport
    directories is named there (those directories are named as a whole)."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "mcpkit"
    missing = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if path.name == "__init__.py":
            if rel.parent != Path(".") and f"{rel.parent.name}/" not in text:
                missing.append(rel.parent.as_posix() + "/")
        elif rel.parts[:2] != ("transports", "http") and path.name not in text:
            missing.append(rel.as_posix())
    assert missing == []
