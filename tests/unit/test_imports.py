"""What importing mcpkit loads: only the package version until a name is used, and a client
program, or the library itself, never the server's modules or the command line's."""

from __future__ import annotations

import subprocess
import sys


def test_a_client_program_does_not_import_the_server() -> None:
    code = (
        "import sys; from mcpkit import Client, ClientOptions, HttpTransport, StdioTransport, McpError; "
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('mcpkit.server', 'mcpkit.transports.http.server')))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_import_mcpkit_loads_no_subpackage_until_a_name_is_used() -> None:
    code = "import sys, mcpkit; print(sorted(m for m in sys.modules if m.startswith('mcpkit.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['mcpkit._version']"


def test_the_library_does_not_import_the_command_line() -> None:
    code = (
        "import asyncio, sys\n"
        "from mcpkit import Client, Server\n"
        "server = Server('s')\n"
        "async def main():\n"
        "    async with Client(server) as client:\n"
        "        await client.list_tools()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in ('click', 'rich', 'mcpkit.cli', 'opentelemetry') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.strip() == "[]"


def test_a_server_program_does_not_import_what_only_some_servers_use() -> None:
    """`from mcpkit import Server` leaves out the standard modules that only skills,
    media, resource templates, sessions over HTTP, dataclasses or mounts need, the skills'
    definitions, the tool transformations, the mounting code, the URI-template matcher,
    the stdio transport and the environment's settings (until the server runs), the
    session store, the MCP Apps messages between a host and its view, the task manager
    and store, the skills catalog, the tasks and skills requests' handlers and the
    worker threads' queue (until a plain ``def`` tool is called): they are loaded when
    used — not by constructing a server either."""
    code = (
        "import sys; from mcpkit import Server; server = Server('s'); server.tool(lambda text: text, name='echo'); "
        "print(sorted(m for m in ('secrets', 'hashlib', 'random', 'urllib.parse', 'mimetypes', 'pathlib',"
        " 'dataclasses', 'copy', 'queue',"
        " 'mcpkit.server.definitions.skills', 'mcpkit.server.definitions.skill_folders', 'mcpkit.server.transform',"
        " 'mcpkit.server.mount', 'mcpkit.server.definitions.uri_template', 'mcpkit.server.environment',"
        " 'mcpkit.transports.stdio.server', 'mcpkit.stores.sessions', 'mcpkit.protocol.app_views',"
        " 'mcpkit.server.tasks', 'mcpkit.stores.tasks', 'mcpkit.server.skills', 'mcpkit.server.features.tasks',"
        " 'mcpkit.server.features.skills')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_server_loads_its_tasks_at_the_first_task() -> None:
    """A server's task manager and the default task store are made, and their modules
    loaded, by the first request that needs them — here the first call of a task tool
    from a client of the tasks extension — not by ``Server(...)``, a task tool's
    registration, the handshake, the capabilities that announce the extension, or a
    plain tool's call; the task then runs as before."""
    code = (
        "import asyncio, sys\n"
        "from mcpkit import Client, ClientOptions, Server\n"
        "LAZY = ('mcpkit.server.tasks', 'mcpkit.stores.tasks')\n"
        "def loaded(): return sorted(m for m in LAZY if m in sys.modules)\n"
        "server = Server('s', task_poll_interval=0.01)\n"
        "@server.tool(task=True)\n"
        "async def slow(n: int) -> str:\n"
        "    return f'{n} done'\n"
        "@server.tool\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "print(loaded())\n"
        "async def main():\n"
        "    async with Client(server, ClientOptions(protocol_version='2026-07-28')) as client:\n"
        "        print(sorted((await client.discover()).capabilities['extensions']))\n"
        "        print((await client.call_tool('echo', {'text': 'plain'})).content[0].text, loaded())\n"
        "        handle = await client.start_task('slow', {'n': 7})\n"
        "        print(handle.status, loaded())\n"
        "        print((await handle.wait()).content[0].text, (await client.get_task(handle.task_id)).status)\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.splitlines() == [
        "[]",
        "['io.modelcontextprotocol/tasks']",
        "plain []",
        "working ['mcpkit.server.tasks', 'mcpkit.stores.tasks']",
        "7 done completed",
    ]
