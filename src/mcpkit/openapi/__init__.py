"""Servers generated from an API (docs/howto/openapi.md): the operations of an OpenAPI
3.0/3.1 document as tools, resources and templates that call the API with ``httpx``.

* :mod:`.server` — :class:`OpenAPIServer`, the facade (a ``Server``), :func:`from_openapi`
  and :func:`from_asgi` (an ASGI app such as FastAPI's in process, no network hop);
* :mod:`.document` — loading and checking a document; local references; :class:`OpenAPIError`;
* :mod:`.operations` — the operations of a document, their parameters, body and response;
* :mod:`.schemas` — OpenAPI schemas as self-contained JSON Schema 2020-12;
* :mod:`.arguments` — a tool's input schema, and the request's parts from its arguments;
* :mod:`.names` — the features' names; :mod:`.routes` — :class:`RouteMap`, the user's rules;
* :mod:`.calls` — one request, built and sent, retried as :class:`Retries` says;
* :mod:`.results` — the API's answer as a tool result or resource contents.

Needs the ``openapi`` extra (httpx). Builds on :mod:`mcpkit.server`; nothing of the
library imports it.
"""

from __future__ import annotations

from .calls import Retries
from .document import Document, OpenAPIError, load_document
from .routes import RouteMap
from .server import OpenAPIServer, from_asgi, from_openapi

__all__ = ["OpenAPIServer", "from_openapi", "from_asgi", "RouteMap", "Retries", "Document", "OpenAPIError", "load_document"]
