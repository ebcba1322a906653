"""mcpkit.testing.pytest_plugin in a user's project: a pytest run in a fresh folder, with
the plugin loaded from a conftest.py the way docs/testing.md says."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.paths import ROOT

CONFTEST = textwrap.dedent(
    """
    import pytest
    from mcpkit import Context, Server

    pytest_plugins = ["mcpkit.testing.pytest_plugin"]

    server = Server("demo")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Colour?", {"type": "object", "properties": {"colour": {"type": "string"}}})
        return answer.content["colour"] if answer.action == "accept" else answer.action

    @pytest.fixture
    def mcp_server():
        return server
    """
)

TESTS = textwrap.dedent(
    """
    import pytest
    from mcpkit import ClientOptions
    from mcpkit.testing import FakeUser, as_json

    async def test_add(mcp_client):
        result = await mcp_client.call_tool("add", {"a": 2, "b": 3})
        assert as_json(result) == {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}

    async def test_tools(mcp_client):
        assert [t.name for t in (await mcp_client.list_tools()).tools] == ["add", "ask"]

    class TestAsking:
        @pytest.fixture
        def mcp_client_options(self):
            return ClientOptions(on_elicit=FakeUser({"colour": "teal"}))

        async def test_answered(self, mcp_client):
            assert (await mcp_client.call_tool("ask")).content[0].text == "teal"
    """
)


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-W", "error", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def project(tmp_path: Path, mode: str = "auto") -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\nasyncio_mode = "{mode}"\nasyncio_default_fixture_loop_scope = "function"\n',
        encoding="utf-8",
    )
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    return tmp_path


def test_the_fixtures_connect_a_client_and_take_options(tmp_path: Path) -> None:
    (project(tmp_path) / "test_demo.py").write_text(TESTS, encoding="utf-8")
    proc = run_pytest(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout, proc.stdout


def test_the_client_fixture_works_in_strict_mode_too(tmp_path: Path) -> None:
    # pytest-asyncio's strict mode: the plugin's async fixture is one of pytest-asyncio's own
    test = "import pytest\n\n@pytest.mark.asyncio\nasync def test_ping(mcp_client):\n    await mcp_client.ping()\n"
    (project(tmp_path, "strict") / "test_strict.py").write_text(test, encoding="utf-8")
    proc = run_pytest(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout, proc.stdout


def test_without_a_server_fixture_the_test_fails_and_says_what_to_define(tmp_path: Path) -> None:
    (project(tmp_path) / "conftest.py").write_text('pytest_plugins = ["mcpkit.testing.pytest_plugin"]\n', encoding="utf-8")
    (tmp_path / "test_nothing.py").write_text("async def test_it(mcp_client):\n    pass\n", encoding="utf-8")
    proc = run_pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "define a `mcp_server` fixture that returns the Server under test" in proc.stdout, proc.stdout


def test_without_pytest_asyncio_the_plugin_says_what_to_install() -> None:
    """The plugin's fixtures are async: where pytest-asyncio is missing (hidden here from
    a fresh interpreter), importing the plugin says so instead of failing later."""
    program = (
        "import sys\n"
        "sys.modules['pytest_asyncio'] = None  # as if it were not installed\n"
        "try:\n"
        "    import mcpkit.testing.pytest_plugin\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.stdout.strip() == "mcpkit.testing.pytest_plugin needs pytest-asyncio: pip install pytest-asyncio", done.stderr
