"""An OpenAPI document, loaded and checked: from a dict, a JSON file or a JSON URL;
its version (3.0 or 3.1), its local ``$ref`` targets found by JSON pointer, and the
base URL its ``servers`` name.

YAML is not read here: parse a YAML document with the YAML library of your choice and
pass the dict (one dependency fewer for everyone who has JSON).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import httpx

__all__ = ["Document", "OpenAPIError", "load_document"]

#: How large a document fetched from a URL may be (bytes).
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024


class OpenAPIError(ValueError):
    """An OpenAPI document that cannot be turned into a server: not 3.0 or 3.1, a
    ``$ref`` that points nowhere or outside the document, a route map that asks for
    something impossible."""


class Document:
    """A checked OpenAPI 3.0 or 3.1 document. ``data`` is the document as given (never
    modified). Raises :class:`OpenAPIError` for another version or no ``paths``."""

    __slots__ = ("data", "version")

    def __init__(self, data: Mapping[str, Any]) -> None:
        if not isinstance(data, Mapping):
            raise OpenAPIError("an OpenAPI document is a JSON object")
        version = str(data.get("openapi", ""))
        if not (version.startswith("3.0") or version.startswith("3.1")):
            swagger = data.get("swagger")
            found = f"Swagger {swagger}" if swagger else f"openapi: {version!r}" if version else "no 'openapi' field"
            raise OpenAPIError(f"only OpenAPI 3.0 and 3.1 documents are supported ({found})")
        if not isinstance(data.get("paths", {}), Mapping):
            raise OpenAPIError("the document's 'paths' is not an object")
        self.data = data
        #: "3.0" or "3.1": what ``nullable`` and ``exclusiveMinimum`` mean depends on it.
        self.version = version[:3]

    @property
    def title(self) -> str:
        info = self.data.get("info")
        title = info.get("title") if isinstance(info, Mapping) else None
        return str(title) if title else "openapi"

    @property
    def api_version(self) -> str:
        info = self.data.get("info")
        version = info.get("version") if isinstance(info, Mapping) else None
        return str(version) if version else "0.1.0"

    def base_url(self) -> str | None:
        """The first of ``servers`` whose URL is absolute, its variables at their
        defaults; None when there is none (a relative or missing server)."""
        for server in self.data.get("servers") or ():
            if not isinstance(server, Mapping) or not isinstance(server.get("url"), str):
                continue
            url: str = server["url"]
            for name, variable in (server.get("variables") or {}).items():
                if isinstance(variable, Mapping) and "default" in variable:
                    url = url.replace("{" + str(name) + "}", str(variable["default"]))
            if url.startswith(("http://", "https://")):
                return url
        return None

    def lookup(self, ref: str) -> Any:
        """What the local reference ``ref`` (``#/components/schemas/Pet``) points to.
        Raises :class:`OpenAPIError` for a reference outside the document or to nothing."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise OpenAPIError(f"only local references are supported, not {ref!r}")
        node: Any = self.data
        pointer = unquote(ref[1:])
        if pointer in ("", "/"):
            return node
        for token in pointer.lstrip("/").split("/"):
            key = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise OpenAPIError(f"the reference {ref!r} points to nothing in the document")
        return node

    def deref(self, node: Any, limit: int = 64) -> Any:
        """``node`` itself, or what its ``$ref`` (and theirs, up to ``limit`` links)
        points to: parameters, request bodies and responses may be references."""
        seen = 0
        while isinstance(node, Mapping) and "$ref" in node:
            seen += 1
            if seen > limit:
                raise OpenAPIError(f"the reference {node['$ref']!r} is part of a chain of references that never ends")
            node = self.lookup(node["$ref"])
        return node


def load_document(source: Mapping[str, Any] | str | os.PathLike[str], *, timeout: float = 30.0) -> Document:
    """The document ``source`` is: a dict, an ``http(s)://`` URL to a JSON document
    (fetched now, at most 32 MiB), or the path of a JSON file. Raises
    :class:`OpenAPIError` for what is no OpenAPI 3.0/3.1 JSON document,
    ``httpx.HTTPError`` when the URL cannot be fetched, ``OSError`` when the file cannot
    be read. Blocking: call it before the event loop serves (or in a thread)."""
    if isinstance(source, Mapping):
        return Document(source)
    text: str
    where = os.fspath(source)
    if where.startswith(("http://", "https://")):
        with httpx.Client(timeout=timeout, follow_redirects=True) as http, http.stream("GET", where) as response:
            response.raise_for_status()
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_DOCUMENT_BYTES:
                    raise OpenAPIError(f"the document at {where} is larger than {MAX_DOCUMENT_BYTES} bytes")
                chunks.append(chunk)
            text = b"".join(chunks).decode("utf-8")
    else:
        with open(where, encoding="utf-8") as f:
            text = f.read()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise OpenAPIError(f"{where} is not a JSON document ({exc}); parse YAML yourself and pass the dict") from None
    return Document(data)
