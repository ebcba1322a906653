"""A notes server backed by SQLite: the database is opened once, by the server's lifespan.

    python examples/cookbook/notes_db_server.py          # the demo: a fresh database, two server runs
    NOTES_DB=notes.db python examples/cookbook/notes_db_server.py server   # serve over stdio

The lifespan opens the database (and creates its table) before the first request and
closes it after the last; tools receive it by annotating a parameter with its type. Every
query is parameterised — user text is never pasted into SQL — and database failures a
model can act on (a duplicate title, a missing note) come back as tool errors. The demo
runs the server twice on the same file to show that the notes outlive the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sqlite3
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypedDict

from mcpkit import (
    INVALID_PARAMS,
    CallToolResult,
    Client,
    McpError,
    Server,
    StdioTransport,
    TextContent,
    ToolAnnotations,
    ToolError,
)

# --- the server ---------------------------------------------------------------------------

SCHEMA = "CREATE TABLE IF NOT EXISTS notes (title TEXT PRIMARY KEY, body TEXT NOT NULL)"


@dataclasses.dataclass
class NotesDb:
    """One SQLite connection, shared by every request. Plain ``def`` tools run on worker
    threads, so the connection is opened for any thread and used under a lock."""

    conn: sqlite3.Connection
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, held alone; commits on success, rolls back on an exception."""
        with self.lock, self.conn:
            yield self.conn


@contextlib.asynccontextmanager
async def open_database(server: Server) -> AsyncIterator[NotesDb]:
    path = os.environ.get("NOTES_DB", "notes.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        conn.execute(SCHEMA)
        count = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        print(f"lifespan: opened {Path(path).name} ({count} notes)", file=sys.stderr)
        yield NotesDb(conn)
    finally:
        conn.close()
        print(f"lifespan: closed {Path(path).name}", file=sys.stderr)


server = Server("notes-db", "1.0.0", lifespan=open_database)


class Note(TypedDict):
    title: str
    body: str


@server.tool
def add_note(title: str, body: str, db: NotesDb) -> str:
    """Save a new note.

    Args:
        title: A unique title.
        body: The text of the note.
    """
    if not title.strip():
        raise ToolError("The title is empty: give the note a title.")
    try:
        with db.transaction() as conn:
            conn.execute("INSERT INTO notes (title, body) VALUES (?, ?)", (title, body))
    except sqlite3.IntegrityError:
        raise ToolError(f"A note titled {title!r} already exists: choose another title.") from None
    return f"Saved {title!r}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def search_notes(query: str, db: NotesDb, limit: int = 10) -> list[Note]:
    """Notes whose title or body contains the query (case-insensitive).

    Args:
        query: Text to look for; % and _ are matched literally.
        limit: At most this many notes (1 to 100).
    """
    pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    sql = "SELECT title, body FROM notes WHERE title LIKE ?1 ESCAPE '\\' OR body LIKE ?1 ESCAPE '\\' ORDER BY title LIMIT ?2"
    with db.transaction() as conn:
        rows = conn.execute(sql, (pattern, max(1, min(limit, 100)))).fetchall()
    return [Note(title=title, body=body) for title, body in rows]


@server.tool
def delete_note(title: str, db: NotesDb) -> str:
    """Delete a note.

    Args:
        title: The note's exact title.
    """
    with db.transaction() as conn:
        deleted = conn.execute("DELETE FROM notes WHERE title = ?", (title,)).rowcount
    if not deleted:
        raise ToolError(f"No note titled {title!r}; search_notes finds titles.")
    return f"Deleted {title!r}"


@server.resource("notes://{title}", mime_type="text/plain")
def read_note(title: str, db: NotesDb) -> str:
    """One note's text, by title."""
    with db.transaction() as conn:
        row = conn.execute("SELECT body FROM notes WHERE title = ?", (title,)).fetchone()
    if row is None:  # a resource has no isError: a missing one is a protocol error
        raise McpError(INVALID_PARAMS, f"No note titled {title!r}", {"uri": f"notes://{title}"})
    return str(row[0])


# --- the demo -------------------------------------------------------------------------------


def text_of(result: CallToolResult) -> str:
    """The text parts of a tool result (a result may also hold images, audio, links...)."""
    return " ".join(part.text for part in result.content if isinstance(part, TextContent))


async def call(client: Client, tool: str, **arguments: Any) -> None:
    args = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    result = await client.call_tool(tool, arguments)
    print(f"{tool}({args})\n    -> {'tool error: ' if result.is_error else ''}{text_of(result)}")


async def read(client: Client, uri: str) -> None:
    try:
        print(f"read {uri} -> {(await client.read_resource(uri)).contents[0].text}")
    except McpError as err:
        print(f"read {uri} -> McpError {err.code}: {err.message}")


async def demo() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NOTES_DB": str(Path(tmp) / "notes.db")}
        command = [sys.executable, __file__, "server"]

        print("== first server process ==")
        transport = StdioTransport(command, env=env, stderr="capture")
        async with Client(transport) as client:
            await call(client, "add_note", title="shopping", body="milk, eggs, 100% rye bread")
            await call(client, "add_note", title="todo", body="call the plumber")
            await call(client, "add_note", title="shopping", body="again")  # the title is taken
            await call(client, "search_notes", query="MILK")
            await call(client, "search_notes", query="_")  # text, not SQL's one-character wildcard
            await call(client, "search_notes", query="x' OR '1'='1")  # just text: no note contains it
            await call(client, "delete_note", title="holiday")
            await read(client, "notes://todo")
            await read(client, "notes://holiday")
        print(transport.stderr_output.decode().strip())

        print("== second server process, same database ==")
        transport = StdioTransport(command, env=env, stderr="capture")
        async with Client(transport) as client:
            await call(client, "delete_note", title="todo")
            await call(client, "search_notes", query="")
        print(transport.stderr_output.decode().strip())


if __name__ == "__main__":
    if sys.argv[1:] == ["server"]:
        server.run()
    else:
        asyncio.run(demo())
