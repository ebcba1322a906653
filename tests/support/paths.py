"""The repository's folders, as the tests name them."""

from __future__ import annotations

from pathlib import Path

#: The repository's root.
ROOT = Path(__file__).resolve().parents[2]
#: ``tests/``.
TESTS = ROOT / "tests"
#: The server programs the tests run (``tests/support/servers/<name>.py``).
SERVERS = Path(__file__).resolve().parent / "servers"
#: What installs the programs the suite needs but pip does not bring (tests fail, naming it,
#: when they are missing).
SETUP = "python scripts/setup_tests.py"
