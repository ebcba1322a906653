"""MCP content blocks: text, image, audio, resource links and embedded resources, the
``Content`` union a result or a prompt message carries; and :class:`Resource`, which a
resource link is (the specification derives one from the other). Re-exported by
:mod:`.types`.
"""

from __future__ import annotations

from msgspec import field

from .wire import Annotations, Icon, Meta, WireStruct

__all__ = [
    "TextContent", "ImageContent", "AudioContent", "Resource", "ResourceLink", "ResourceContents", "EmbeddedResource", "Content",
]


class TextContent(WireStruct, kw_only=True, tag_field="type", tag="text"):
    """A text content block (``"type": "text"``): what a tool returns a ``str`` as.

    Attributes:
        text: The text.
        annotations: Optional hints for the client: audience, priority, last modified.
        meta: The block's ``_meta``.
    """

    text: str
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ImageContent(WireStruct, kw_only=True, tag_field="type", tag="image"):
    """An image content block (``"type": "image"``).

    Attributes:
        data: The image, base64-encoded.
        mime_type: Its media type, such as ``"image/png"``.
        annotations: Optional hints for the client.
        meta: The block's ``_meta``.
    """

    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class AudioContent(WireStruct, kw_only=True, tag_field="type", tag="audio"):
    """An audio content block (``"type": "audio"``).

    Attributes:
        data: The audio, base64-encoded.
        mime_type: Its media type, such as ``"audio/wav"``.
        annotations: Optional hints for the client.
        meta: The block's ``_meta``.
    """

    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


class Resource(WireStruct, kw_only=True):
    """A resource as ``resources/list`` describes it.

    Attributes:
        uri: The URI to read it by.
        name: Its name.
        title: A human-readable title.
        description: What it holds.
        mime_type: Its media type, if known.
        size: Its size in bytes, if known.
        annotations: Optional hints for the client.
        icons: Icons a client may show.
        meta: The resource's ``_meta``.
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = field(default=None, name="_meta")


class ResourceLink(Resource, kw_only=True, tag_field="type", tag="resource_link"):
    """A content block that points to a resource by URI instead of embedding it
    (``"type": "resource_link"``); the client may read it with ``resources/read``. As in
    the specification, it is a :class:`Resource` with a ``type``: the same fields,
    ``icons`` included.
    """


class ResourceContents(WireStruct, kw_only=True):
    """One piece of a resource: ``text`` for text, ``blob`` (base64) for binary.

    Attributes:
        uri: The URI of the resource it came from.
        mime_type: Its media type.
        text: The contents, for text.
        blob: The contents, base64-encoded, for binary data.
        meta: The contents' ``_meta``.
    """

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: Meta | None = field(default=None, name="_meta")


class EmbeddedResource(WireStruct, kw_only=True, tag_field="type", tag="resource"):
    """A content block that carries a resource's contents (``"type": "resource"``).

    Attributes:
        resource: The contents: ``text`` or a base64 ``blob``.
        annotations: Optional hints for the client.
        meta: The block's ``_meta``.
    """

    resource: ResourceContents
    annotations: Annotations | None = None
    meta: Meta | None = field(default=None, name="_meta")


Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
