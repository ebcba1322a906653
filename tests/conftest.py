"""Shared fixtures: paths and a helper to spawn Python servers over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"


@pytest.fixture
def python() -> str:
    return sys.executable


def server_command(name: str, *args: str) -> list[str]:
    """The command that runs tests/servers/<name>.py with this interpreter."""
    return [sys.executable, str(SERVERS / f"{name}.py"), *args]
