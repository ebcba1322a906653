"""The public surface is exactly what docs/api.md documents, and importing it is light."""

from __future__ import annotations

import re
import subprocess
import sys

import mcpkit
from support.paths import ROOT


def _documented() -> set[str]:
    text = (ROOT / "docs" / "api.md").read_text()
    names: set[str] = set()
    for row in re.findall(r"^\| (.+?) \|", text, re.M):
        names.update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", row))
    names.discard("name")
    return names | {"__version__"}


def test_all_matches_docs() -> None:
    exported = set(mcpkit.__all__)
    documented = _documented()
    assert exported - documented == set(), "exported but not documented"
    assert documented - exported == set(), "documented but not exported"


def test_every_exported_name_exists() -> None:
    for name in mcpkit.__all__:
        assert hasattr(mcpkit, name), name


def test_import_does_not_load_heavy_modules() -> None:
    code = "import sys, mcpkit; print(','.join(m for m in ('jsonschema_rs', 'pydantic', 'uvicorn', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
