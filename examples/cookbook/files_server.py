"""A file-system server that works only inside the directories the client shares.

    python examples/cookbook/files_server.py          # the demo: spawn this file as a server, drive it
    python examples/cookbook/files_server.py server   # serve over stdio, for an MCP host

MCP *roots* are the directories a user lets a server work in; the client declares them
(``ClientOptions(roots=[...])``) and the server asks for them with ``ctx.list_roots()``.
This server asks on every call, resolves each path the way the operating system would
(``..`` and symbolic links included) and refuses anything that ends up outside every
root, with a tool error the model can read. The demo shares a temporary project folder,
tries to escape it three ways, adds a second root while connected, and finally connects
a client that shares no roots at all.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from mcpkit import (
    CallToolResult,
    Client,
    ClientOptions,
    Context,
    McpError,
    Root,
    Server,
    StdioTransport,
    TextContent,
    ToolAnnotations,
    ToolError,
)

MAX_BYTES = 64 * 1024  # a tool result goes to a model: keep it small

# --- the server ---------------------------------------------------------------------------

server = Server("files", "1.0.0", instructions="Lists and reads text files inside the client's roots.")
READ_ONLY = ToolAnnotations(read_only_hint=True)


async def shared_directories(ctx: Context) -> list[str]:
    """The paths of the client's ``file://`` roots. Raises McpError(-32021) when the
    client did not declare roots (left uncaught: the client gets that protocol error)."""
    roots = await ctx.list_roots()  # ask first, act after: in the modern era the call is re-run
    folders = [url2pathname(unquote(urlparse(root.uri).path)) for root in roots if root.uri.startswith("file:")]
    if not folders:
        raise ToolError("The client shares no directories: add a file:// root to use this server.")
    return folders


def inside_roots(folders: list[str], path: str) -> Path:
    """``path`` (absolute, or relative to the first root) resolved, if it lies in a root.
    Blocking (it asks the file system): the tools run it on a worker thread."""
    resolved = [Path(folder).resolve() for folder in folders]
    real = (resolved[0] / path).resolve()  # an absolute path replaces the root; '..' and symlinks are followed
    if not any(real.is_relative_to(folder) for folder in resolved):
        raise ToolError(f"{path!r} is outside the client's roots; use a path inside one of them.")
    return real


def list_entries(folders: list[str], directory: str) -> list[str]:
    folder = inside_roots(folders, directory)
    if not folder.is_dir():
        raise ToolError(f"{directory!r} is not a directory.")
    return sorted(entry.name + ("/" if entry.is_dir() else "") for entry in folder.iterdir())


def read_text(folders: list[str], path: str) -> str:
    file = inside_roots(folders, path)
    if not file.is_file():
        raise ToolError(f"{path!r} is not a file; list_files shows what there is.")
    if file.stat().st_size > MAX_BYTES:
        raise ToolError(f"{path!r} is larger than {MAX_BYTES} bytes; read a smaller file.")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{path!r} is not UTF-8 text.") from None


@server.tool(annotations=READ_ONLY)
async def list_files(ctx: Context, directory: str = ".") -> list[str]:
    """The entries of a directory inside the client's roots (directories end with '/').

    Args:
        directory: Absolute, or relative to the first root.
    """
    folders = await shared_directories(ctx)
    return await asyncio.to_thread(list_entries, folders, directory)  # file I/O off the event loop


@server.tool(annotations=READ_ONLY)
async def read_file(ctx: Context, path: str) -> str:
    """The text of a file inside the client's roots (UTF-8, at most 64 KiB).

    Args:
        path: Absolute, or relative to the first root.
    """
    folders = await shared_directories(ctx)
    return await asyncio.to_thread(read_text, folders, path)


# --- the demo -------------------------------------------------------------------------------


def text_of(result: CallToolResult) -> str:
    """The text parts of a tool result (a result may also hold images, audio, links...)."""
    return " ".join(part.text for part in result.content if isinstance(part, TextContent))


async def show(client: Client, label: str, tool: str, arguments: dict[str, Any]) -> None:
    """Call a tool and print what came back, on whichever channel it came."""
    try:
        result = await client.call_tool(tool, arguments)
    except McpError as err:  # a protocol error: the request could not be served at all
        print(f"{label:<36} -> McpError {err.code}: {err.message}")
        return
    text = text_of(result).strip()
    print(f"{label:<36} -> {'tool error' if result.is_error else 'ok'}: {text}")


def make_tree(base: Path) -> tuple[Path, Path]:
    """A project to share, a secret beside it, a symlink out of it, and a second folder."""
    project, team = base / "project", base / "team"
    (project / "src").mkdir(parents=True)
    team.mkdir()
    (project / "README.md").write_text("# Demo project\n")
    (project / "src" / "app.py").write_text("print('hello')\n")
    (base / "secret.txt").write_text("the launch codes\n")
    (project / "shortcut").symlink_to(base / "secret.txt")  # a link that points out of the root
    (team / "glossary.txt").write_text("MCP: Model Context Protocol\n")
    return project, team


async def demo() -> None:
    command = [sys.executable, __file__, "server"]
    with tempfile.TemporaryDirectory() as tmp:
        project, team = make_tree(Path(tmp))
        roots = [Root(uri=project.as_uri(), name="project")]
        print("The client shares one root: project/")
        async with Client(StdioTransport(command, stderr="devnull"), ClientOptions(roots=roots)) as client:
            await show(client, "list_files()", "list_files", {})
            await show(client, "list_files('src')", "list_files", {"directory": "src"})
            await show(client, "read_file('README.md')", "read_file", {"path": "README.md"})
            await show(client, "read_file('../secret.txt')", "read_file", {"path": "../secret.txt"})
            await show(client, "read_file('shortcut')  [a symlink]", "read_file", {"path": "shortcut"})
            await show(client, "read_file('/etc/passwd')", "read_file", {"path": "/etc/passwd"})
            await show(client, "read_file('src')", "read_file", {"path": "src"})
            glossary = {"path": "../team/glossary.txt"}
            await show(client, "read_file('../team/glossary.txt')", "read_file", glossary)

            print("The user shares a second root: team/")
            await client.set_roots([*roots, Root(uri=team.as_uri(), name="team")])
            await show(client, "read_file('../team/glossary.txt')", "read_file", glossary)

        print("A client that declares no roots:")
        async with Client(StdioTransport(command, stderr="devnull")) as client:
            await show(client, "list_files()", "list_files", {})


if __name__ == "__main__":
    if sys.argv[1:] == ["server"]:
        server.run()
    else:
        asyncio.run(demo())
