"""Shared fixtures: paths and a helper to spawn Python servers over stdio."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERAS = [pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")]


@pytest.fixture
def python() -> str:
    return sys.executable


def server_command(name: str, *args: str) -> list[str]:
    """The command that runs tests/servers/<name>.py with this interpreter."""
    return [sys.executable, str(SERVERS / f"{name}.py"), *args]


def load_server(name: str) -> ModuleType:
    """Import tests/servers/<name>.py as a module (for in-process use of a server script)."""
    spec = importlib.util.spec_from_file_location(f"_mcpkit_tests_{name}", SERVERS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
