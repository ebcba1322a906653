"""What the client commands print: results as text (rich tables for lists) or as JSON
(the wire's camelCase), errors on stderr (or as a JSON ``error`` object on stdout with
``--json``), and the live progress bar that progress notifications feed."""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Sequence
from typing import Any

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..protocol.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    Tool,
)

__all__ = ["Output", "ProgressBar"]


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


class Output:
    """Where a command's results and errors go: ``as_json`` prints JSON on stdout (one
    document per command), text otherwise."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.out = Console(soft_wrap=True, highlight=False)
        self.err = Console(stderr=True, highlight=False)

    # --- primitives ---------------------------------------------------------------------

    def json(self, value: Any) -> None:
        """``value`` (structs, lists, dicts) as indented JSON on stdout."""
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(_builtins(value)), indent=2).decode() + "\n")
        sys.stdout.flush()

    def text(self, text: str) -> None:
        """``text`` exactly, on stdout (no markup)."""
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    def error(self, code: int, kind: str, error_code: int | None, message: str, data: Any) -> None:
        """A failure: ``{"error": {...}}`` on stdout with ``--json``, a red line on stderr
        otherwise (always also the exit ``code``, set by the caller)."""
        if self.as_json:
            error: dict[str, Any] = {"kind": kind, "code": error_code, "message": message}
            if data is not None:
                error["data"] = data
            self.json({"error": error, "exitCode": code})
            return
        label = f"error {error_code}" if kind == "protocol" and error_code is not None else f"{kind} error"
        self.err.print(f"[bold red]{label}:[/] {escape(message)}")
        if data is not None and kind == "protocol":
            self.err.print(f"[dim]data: {escape(msgspec.json.encode(data).decode())}[/]")

    def note(self, message: str) -> None:
        """A remark for the person at the terminal, on stderr."""
        self.err.print(message)

    # --- lists --------------------------------------------------------------------------

    def tools(self, tools: Sequence[Tool]) -> None:
        table = Table("tool", "description", "arguments (* required)", title="tools", title_justify="left")
        for tool in tools:
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
            required = set(schema.get("required") or ())
            props = schema.get("properties") or {}
            args = ", ".join(f"{name}{'*' if name in required else ''}" for name in props)
            table.add_row(escape(tool.name), escape(_first_line(tool.description)), escape(args))
        self._table(table, tools)

    def resources(self, resources: Sequence[Resource]) -> None:
        table = Table("uri", "name", "mime type", title="resources", title_justify="left")
        for res in resources:
            table.add_row(escape(res.uri), escape(res.name or ""), escape(res.mime_type or ""))
        self._table(table, resources)

    def templates(self, templates: Sequence[ResourceTemplate]) -> None:
        table = Table("uri template", "name", "description", title="resource templates", title_justify="left")
        for tpl in templates:
            table.add_row(escape(tpl.uri_template), escape(tpl.name or ""), escape(_first_line(tpl.description)))
        self._table(table, templates)

    def prompts(self, prompts: Sequence[Prompt]) -> None:
        table = Table("prompt", "description", "arguments (* required)", title="prompts", title_justify="left")
        for prompt in prompts:
            args = ", ".join(f"{a.name}{'*' if a.required else ''}" for a in prompt.arguments or ())
            table.add_row(escape(prompt.name), escape(_first_line(prompt.description)), escape(args))
        self._table(table, prompts)

    def _table(self, table: Table, items: Sequence[Any]) -> None:
        if items:
            self.out.print(table)
        else:
            self.out.print(f"{table.title}: none")

    # --- results ------------------------------------------------------------------------

    def tool_result(self, result: CallToolResult) -> None:
        if self.as_json:
            self.json(result)
            return
        for block in result.content or ():
            self.text(_block_text(block))
        if not result.content and result.structured_content is not None:
            self.text(msgspec.json.format(msgspec.json.encode(result.structured_content), indent=2).decode())
        if result.is_error:
            self.err.print("[bold red]the tool reported an error[/]")

    def resource(self, result: ReadResourceResult) -> None:
        if self.as_json:
            self.json(result)
            return
        for contents in result.contents:
            self.text(_contents_text(contents))

    def prompt(self, result: GetPromptResult) -> None:
        if self.as_json:
            self.json(result)
            return
        if result.description:
            self.err.print(f"[dim]{escape(result.description)}[/]")
        for message in result.messages:
            self.out.print(f"[bold]{escape(message.role)}:[/]")
            self.text(_block_text(message.content))


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


def _size(data: str) -> str:
    try:
        return f"{len(base64.b64decode(data, validate=False))} bytes"
    except (binascii.Error, ValueError):
        return "undecodable base64"


def _contents_text(contents: ResourceContents) -> str:
    if contents.text is not None:
        return contents.text
    mime = contents.mime_type or "binary"
    return f"[{mime} resource {contents.uri}: {_size(contents.blob or '')}]"


def _block_text(block: Any) -> str:
    """One content block as text: text as it is, the rest described in brackets."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind} {block.mime_type}: {_size(block.data)}]"
    if isinstance(block, ResourceLink):
        return f"[resource link {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if isinstance(block, EmbeddedResource):
        return _contents_text(block.resource)
    return msgspec.json.encode(_builtins(block)).decode()


class ProgressBar:
    """A live progress bar on stderr, shown from the first progress notification on,
    only when stderr is a terminal (``enabled``). Used as a context manager around the
    call; :meth:`update` is the call's ``on_progress``."""

    def __init__(self, output: Output, label: str, enabled: bool = True) -> None:
        self._console = output.err
        self._label = label
        self.enabled = enabled and self._console.is_terminal
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.enabled:
            return
        description = escape(message or self._label)
        if self._progress is None:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:g}/{task.total:g}" if total else "{task.completed:g}"),
                TimeElapsedColumn(),
                console=self._console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(description, total=total)
        assert self._task is not None
        self._progress.update(self._task, completed=progress, total=total, description=description)
