"""What the API answered, as MCP: a 2xx JSON object is structured content (and its
JSON as text), other JSON and text are text, images and sounds their content blocks,
anything else an embedded file; a status of 400 or more is a tool error (``isError``)
with the status and a bounded excerpt of the body. For a resource, the body is its
contents, and an error status a JSON-RPC error.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import httpx

from ..protocol.content import ResourceContents
from ..protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, flatten_text
from ..protocol.types import CallToolResult, TextContent
from ..server.media import Audio, File, Image

__all__ = ["tool_result", "resource_contents", "error_text", "is_json"]

_FILENAME: Final = re.compile(r"""filename\*?=(?:UTF-8'')?"?([^";]+)"?""", re.I)


def is_json(media_type: str | None) -> bool:
    base = (media_type or "").split(";", 1)[0].strip().lower()
    return base == "application/json" or base.endswith("+json")


def _media_type(response: httpx.Response) -> str:
    kind: str = response.headers.get("content-type", "")
    return kind.split(";", 1)[0].strip().lower()


def error_text(response: httpx.Response, body: bytes, method: str, path: str, excerpt: int) -> str:
    """``HTTP 404 Not Found from GET /pets/{id}: {excerpt of the body}``."""
    head = f"HTTP {response.status_code} {response.reason_phrase}".rstrip() + f" from {method.upper()} {path}"
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return head
    cut = text[:excerpt] + ("…" if len(text) > excerpt else "")
    return f"{head}: {flatten_text(cut, 4 * excerpt + 16)}"


def tool_result(
    response: httpx.Response, body: bytes, *, method: str, path: str, structured: bool, excerpt: int
) -> CallToolResult:
    """The tool result for ``response``. ``structured``: the tool declares an output
    schema, so a successful answer must be a JSON object (else a tool error says so)."""
    if response.status_code >= 400:
        return CallToolResult(content=[TextContent(text=error_text(response, body, method, path, excerpt))], is_error=True)
    kind = _media_type(response)
    if is_json(kind) or (structured and body[:1] in (b"{", b"[")):
        try:
            data = json.loads(body)
        except ValueError:
            data = _NOT_JSON
        if isinstance(data, dict):
            return CallToolResult(content=[TextContent(text=body.decode("utf-8", "replace"))], structured_content=data)
        if structured:
            what = "no JSON" if data is _NOT_JSON else f"JSON {type(data).__name__}"
            text = f"the API answered {method.upper()} {path} with {what}, not the object its document describes"
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
        return CallToolResult(content=[TextContent(text=body.decode("utf-8", "replace"))])
    if structured:
        text = f"the API answered {method.upper()} {path} with {kind or 'no content'}, not the JSON object its document describes"
        return CallToolResult(content=[TextContent(text=text)], is_error=True)
    if not body:
        return CallToolResult(content=[TextContent(text=f"HTTP {response.status_code} {response.reason_phrase}".rstrip())])
    if kind.startswith("text/") or kind in ("application/xml", "application/yaml", ""):
        try:
            return CallToolResult(content=[TextContent(text=body.decode(response.encoding or "utf-8"))])
        except (UnicodeDecodeError, LookupError):
            pass
    name = _filename(response, path)
    if kind.startswith("image/"):
        return CallToolResult(content=[Image(body, mime_type=kind).to_content()])
    if kind.startswith("audio/"):
        return CallToolResult(content=[Audio(body, mime_type=kind).to_content()])
    return CallToolResult(content=[File(body, mime_type=kind or None, name=name).to_content()])


_NOT_JSON: Final[Any] = object()


def _filename(response: httpx.Response, path: str) -> str:
    match = _FILENAME.search(response.headers.get("content-disposition", ""))
    if match:
        return match.group(1).strip()
    return path.rstrip("/").rsplit("/", 1)[-1] or "response"


def resource_contents(
    response: httpx.Response, body: bytes, *, uri: str, method: str, path: str, excerpt: int
) -> ResourceContents:
    """The contents of the resource ``uri`` for ``response``. Raises ``McpError``
    (invalid params for a 4xx status, internal error otherwise, the status in its data)
    for a status of 400 or more."""
    if response.status_code >= 400:
        code = INVALID_PARAMS if response.status_code < 500 else INTERNAL_ERROR
        raise McpError(code, error_text(response, body, method, path, excerpt), {"status": response.status_code})
    kind = _media_type(response) or "application/octet-stream"
    if is_json(kind) or kind.startswith("text/"):
        try:
            return ResourceContents(uri=uri, mime_type=kind, text=body.decode(response.encoding or "utf-8"))
        except (UnicodeDecodeError, LookupError):
            pass
    return File(body, mime_type=kind).to_resource_contents(uri)
