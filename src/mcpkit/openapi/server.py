"""The facade: :class:`OpenAPIServer`, a :class:`~mcpkit.Server` whose tools, resources
and templates are the operations of an OpenAPI document, called with ``httpx``; and
:func:`from_openapi` and :func:`from_asgi`, which make one from a document or from an
ASGI app in this process (a FastAPI app's own document, no network hop).

The ``httpx.AsyncClient`` is the server's: made when the server starts serving (its
lifespan) and closed after the last connection, unless one is given, which the caller
owns and closes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from ..protocol.errors import INVALID_PARAMS, McpError, ToolError
from ..protocol.types import CallToolResult, ToolAnnotations
from ..server.lifespan import Lifespan
from ..server.server import Server
from .arguments import Arguments, arguments_for
from .calls import BadPathValue, ResponseTooLarge, Retries, build_request, send
from .document import Document, OpenAPIError, load_document
from .names import Names, base_name
from .operations import Operation, operations
from .results import resource_contents, tool_result
from .routes import RouteMap, route_for
from .schemas import SchemaConverter

__all__ = ["OpenAPIServer", "from_openapi", "from_asgi"]

#: An ASGI application: ``async def app(scope, receive, send)``.
AsgiApp = Callable[..., Any]


class OpenAPIServer(Server):
    """A server offering the operations of the OpenAPI 3.0/3.1 ``document`` (a dict, a
    JSON file's path or a JSON URL; docs/howto/openapi.md).

    Each operation is a tool unless ``route_maps`` say otherwise (the first
    :class:`RouteMap` that matches decides: a tool, a resource or template for a
    ``GET``, or left out). Its arguments are its parameters and its JSON body's
    properties (:mod:`.arguments` says how colliding names are settled); its result is
    the API's answer: a JSON object as structured content (with the response's schema
    as the tool's output schema when that is an object and ``output_schemas`` is true),
    other answers as text or media, an error status as a tool error with the status and
    at most ``error_excerpt`` characters of the body.

    Requests go to ``base_url`` (default: the document's first absolute ``servers``
    URL) with ``headers`` (the API's credentials: ``{"Authorization": "Bearer …"}``),
    ``auth`` (any ``httpx.Auth``), ``timeout`` (seconds, or an ``httpx.Timeout``) and
    ``transport`` (an ``httpx`` transport: ``httpx.ASGITransport(app)`` for an app in
    process), retried as ``retries`` says (a :class:`Retries`, or a number of retries);
    or through ``client``, an ``httpx.AsyncClient`` of the caller's (then those four are
    not taken). Answers over ``max_response_bytes`` (16 MiB) are tool errors.

    The name and version default to the document's title and version; the other
    arguments are :class:`~mcpkit.Server`'s, and a ``lifespan`` runs inside the one that
    opens the client. Raises :class:`OpenAPIError` for a document that is not OpenAPI
    3.0/3.1 or a reference that points nowhere, or route maps that make a resource of
    what cannot be one; ``ValueError`` with no base URL to be had; what ``Server`` raises
    for a name its registry refuses.
    """

    def __init__(
        self,
        document: Mapping[str, Any] | str | os.PathLike[str] | Document,
        name: str | None = None,
        version: str | None = None,
        *,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retries: Retries | int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
        client: httpx.AsyncClient | None = None,
        route_maps: Sequence[RouteMap] = (),
        resource_scheme: str = "api",
        output_schemas: bool = True,
        error_excerpt: int = 500,
        max_response_bytes: int = 16 * 1024 * 1024,
        lifespan: Lifespan | None = None,
        **server_options: Any,
    ) -> None:
        doc = document if isinstance(document, Document) else load_document(document)
        if client is None and base_url is None:
            base_url = doc.base_url()
            if base_url is None:
                raise ValueError("the document names no absolute server URL: give base_url=")
        self.document = doc
        self._retries = retries if isinstance(retries, Retries) else Retries(attempts=retries)
        self._client_given = client
        self._client: httpx.AsyncClient | None = client
        self._client_options: dict[str, Any] = {
            "base_url": base_url or "",
            "headers": dict(headers or {}),
            "auth": auth,
            "timeout": timeout,
            "transport": transport,
        }
        self._excerpt = error_excerpt
        self._limit = max_response_bytes
        self._user_lifespan = lifespan

        def opened(server: Server) -> contextlib.AbstractAsyncContextManager[Any]:
            return self._opened(server)

        if lifespan is not None:  # handlers may ask for its state by type, as on any Server
            opened.__wrapped__ = lifespan  # type: ignore[attr-defined]
        super().__init__(name or doc.title, version or doc.api_version, lifespan=opened, **server_options)
        self._build(route_maps, resource_scheme, output_schemas)

    @contextlib.asynccontextmanager
    async def _opened(self, server: Server) -> AsyncIterator[Any]:
        """The lifespan: the client open (unless given), then the user's lifespan inside."""
        own = None
        if self._client_given is None:
            own = httpx.AsyncClient(**self._client_options)
            self._client = own
        try:
            if self._user_lifespan is None:
                yield None
            else:
                async with self._user_lifespan(server) as state:
                    yield state
        finally:
            if own is not None:
                self._client = None
                await own.aclose()

    # --- building -------------------------------------------------------------------------

    def _build(self, route_maps: Sequence[RouteMap], scheme: str, output_schemas: bool) -> None:
        names = Names()
        used: dict[int, str] = {}
        for op in operations(self.document):
            rule = route_for(op, route_maps)
            kind = rule.kind if rule is not None else "tool"
            if kind == "exclude":
                continue
            if rule is not None and rule.name is not None:
                if id(rule) in used:
                    raise OpenAPIError(
                        f"the route map naming {rule.name!r} matches two operations: {used[id(rule)]} and {_where(op)}"
                    )
                used[id(rule)] = _where(op)
            name = names.claim(rule.name if rule is not None and rule.name else base_name(op))
            if kind == "resource":
                self._add_resource(op, name, scheme)
            else:
                self._add_operation_tool(op, name, output_schemas)

    def _add_operation_tool(self, op: Operation, name: str, output_schemas: bool) -> None:
        args = arguments_for(op, SchemaConverter(self.document))
        output = _output_schema(self.document, op) if output_schemas else None

        async def call(arguments: dict[str, Any]) -> CallToolResult:
            try:
                response, body = await self._call(op, args, arguments)
            except BadPathValue as exc:
                raise ToolError(f"{_where(op)}: {exc}") from exc
            return tool_result(
                response, body, method=op.method, path=op.path, structured=output is not None, excerpt=self._excerpt
            )

        self.add_tool(
            name,
            _description(op),
            args.schema,
            call,
            output_schema=output,
            annotations=_annotations(op),
            tags=op.tags,
            meta={"openapi": {"method": op.method.upper(), "path": op.path}},
        )

    def _add_resource(self, op: Operation, name: str, scheme: str) -> None:
        if op.method != "get":
            raise OpenAPIError(f"only GET operations can be resources, not {_where(op)}")
        blocking = [p.name for p in op.parameters if p.required and p.location != "path"]
        if blocking:
            raise OpenAPIError(f"{_where(op)} needs {', '.join(blocking)}, which a resource URI cannot carry")
        args = arguments_for(op, SchemaConverter(self.document))
        uri = f"{scheme}://{op.path.lstrip('/')}"
        mime = op.success.media_type if op.success is not None else None

        async def read(**values: str) -> Any:
            try:
                response, body = await self._call(op, args, values)
            except BadPathValue as exc:
                raise McpError(INVALID_PARAMS, f"Invalid params: {exc}") from exc
            return resource_contents(
                response, body, uri=_expand(uri, values), method=op.method, path=op.path, excerpt=self._excerpt
            )

        self.resource(uri, name=name, description=_description(op), mime_type=mime, tags=op.tags)(read)

    # --- calling --------------------------------------------------------------------------

    async def _call(self, op: Operation, args: Arguments, arguments: Mapping[str, Any]) -> tuple[httpx.Response, bytes]:
        """One call of ``op``. Raises :class:`BadPathValue` for a path parameter that
        would not stay one segment, :class:`ToolError` when the API could not be reached
        or answered too much; cancellation cancels the request."""
        client = self._client
        if client is None:
            raise ToolError("the API client is closed: the server is not serving")
        request = build_request(client, op, args, arguments)
        try:
            return await send(client, request, op.method, self._retries, self._limit)
        except httpx.TransportError as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise ToolError(f"could not reach the API for {_where(op)}: {reason}") from exc
        except ResponseTooLarge as exc:
            raise ToolError(f"{_where(op)}: {exc}") from exc


def _where(op: Operation) -> str:
    return f"{op.method.upper()} {op.path}"


def _expand(uri: str, values: Mapping[str, str]) -> str:
    """The URI read: the template with the (decoded) values percent-encoded again."""
    for key, value in values.items():
        uri = uri.replace("{" + key + "}", quote(value, safe=""))
    return uri


def _description(op: Operation) -> str | None:
    parts = [p.strip() for p in (op.summary, op.description) if p and p.strip()]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    return "\n\n".join(parts) or None


def _annotations(op: Operation) -> ToolAnnotations:
    read_only = op.method in ("get", "head", "options")
    return ToolAnnotations(
        title=op.summary,
        read_only_hint=read_only,
        destructive_hint=op.method == "delete" if not read_only else None,
        idempotent_hint=op.method in ("get", "head", "options", "put", "delete"),
        open_world_hint=True,
    )


def _output_schema(document: Document, op: Operation) -> dict[str, Any] | None:
    """The success response's schema, when it describes an object and JSON is all the
    operation answers with."""
    if op.success is None or op.success.schema is None or not op.success.only_json:
        return None
    converter = SchemaConverter(document)
    schema = converter.convert(op.success.schema)
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind != "object" and not (kind is None and "properties" in schema and not {"anyOf", "oneOf", "allOf"} & schema.keys()):
        return None
    return converter.finish({"type": "object", **schema})


def from_openapi(document: Mapping[str, Any] | str | os.PathLike[str], **options: Any) -> OpenAPIServer:
    """:class:`OpenAPIServer` ``(document, **options)``: a server for the API ``document``
    describes. Raises what it raises."""
    return OpenAPIServer(document, **options)


def from_asgi(
    app: AsgiApp,
    document: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    run_lifespan: bool = True,
    **options: Any,
) -> OpenAPIServer:
    """A server for the ASGI ``app`` (FastAPI, Starlette, any) in this process: its
    operations called through ``httpx.ASGITransport``, with no socket. ``document``
    defaults to ``app.openapi()`` (FastAPI's own). The transport runs no lifespan: with
    ``run_lifespan``, the lifespan of a Starlette or FastAPI app (its
    ``router.lifespan_context``) runs within the server's, around a ``lifespan`` given;
    another app's startup is the caller's. Raises ``TypeError`` when there is no document
    and the app has no ``openapi()``; then what :class:`OpenAPIServer` raises."""
    if document is None:
        maker = getattr(app, "openapi", None)
        if not callable(maker):
            raise TypeError("this ASGI app has no openapi(): give its OpenAPI document")
        document = maker()
    options.setdefault("base_url", "http://asgi.local")
    options.setdefault("transport", httpx.ASGITransport(app=app))
    app_lifespan = getattr(getattr(app, "router", None), "lifespan_context", None)
    if run_lifespan and callable(app_lifespan):
        options["lifespan"] = _nested(app_lifespan, app, options.get("lifespan"))
    assert document is not None
    return OpenAPIServer(document, **options)


def _nested(app_lifespan: Callable[[Any], Any], app: AsgiApp, inner: Lifespan | None) -> Lifespan:
    """The server's lifespan that runs the app's, then ``inner`` within it (its state is the server's)."""

    @contextlib.asynccontextmanager
    async def both(server: Server) -> AsyncIterator[Any]:
        async with app_lifespan(app):
            if inner is None:
                yield None
            else:
                async with inner(server) as state:
                    yield state

    if inner is not None:  # handlers may ask for its state by type
        both.__wrapped__ = inner  # type: ignore[attr-defined]
    return both
