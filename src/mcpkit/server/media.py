"""Images, audio and files as tool results, resource contents and prompt messages:
:class:`Image`, :class:`Audio` and :class:`File` take bytes or a path, guess the media
type (from the path's extension, else from the bytes' signature), and do the base64.

A handler returns one (or a list of them, mixed with content blocks) and the server turns
it into the content block its place calls for: a tool result's ``ImageContent``,
``AudioContent`` or ``EmbeddedResource``; a resource's contents (a ``blob``, or ``text``
for a text file); a prompt's user message. A path is read when the object is made, in the
handler that makes it.
"""

from __future__ import annotations

import base64
import os
from typing import ClassVar, Final

from ..protocol.content import AudioContent, EmbeddedResource, ImageContent, ResourceContents

__all__ = ["Media", "Image", "Audio", "File"]

#: Leading bytes of the formats a client most often gets, and their media types.
_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"%PDF-", "application/pdf"),
)
#: What ``mimetypes`` may not know on every machine.
_EXTENSIONS: Final = {".webp": "image/webp", ".flac": "audio/flac", ".opus": "audio/ogg", ".md": "text/markdown"}


def _sniff(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    return next((mime for head, mime in _SIGNATURES if data.startswith(head)), None)


class Media:
    """Bytes with a media type (see the module's docstring). Give ``data`` or ``path``
    (exactly one); ``mime_type`` overrides the guess. Raises ``ValueError`` for both or
    neither, and for a type that cannot be guessed where one is required; ``OSError``
    if the path cannot be read."""

    #: The family of media types this kind takes (``"image/"``), or "" for any.
    family: ClassVar[str] = ""
    #: The type of a file nothing tells the type of (None: the type must be known).
    fallback: ClassVar[str | None] = None

    __slots__ = ("data", "mime_type", "name")

    def __init__(
        self,
        data: bytes | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        mime_type: str | None = None,
        name: str | None = None,
    ) -> None:
        if (data is None) == (path is None):
            raise ValueError(f"{type(self).__name__} takes data or a path, exactly one of them")
        guessed: str | None = None
        if path is not None:
            where = os.fspath(path)
            with open(where, "rb") as f:
                data = f.read()
            name = name or os.path.basename(where)
            guessed = _from_extension(where)
        assert data is not None
        self.data = bytes(data)
        #: The file's name (the path's, or the one given), used in a file's URI.
        self.name = name
        mime = mime_type or guessed or _sniff(self.data) or self.fallback
        if mime is None or not mime.startswith(self.family):
            wanted = f"an {self.family[:-1]} type" if self.family else "a media type"
            raise ValueError(f"cannot tell the media type of this {type(self).__name__.lower()}: give mime_type= ({wanted})")
        self.mime_type = mime

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.mime_type}, {len(self.data)} bytes)"

    @property
    def base64(self) -> str:
        """The bytes, base64-encoded."""
        return base64.b64encode(self.data).decode("ascii")

    def to_content(self) -> ImageContent | AudioContent | EmbeddedResource:
        """The content block a tool result or a prompt message carries."""
        return EmbeddedResource(resource=self.to_resource_contents(self._uri()))

    def to_resource_contents(self, uri: str) -> ResourceContents:
        """The contents of a resource ``uri``: text for a text type that decodes as
        UTF-8, else a blob."""
        if self.mime_type.startswith("text/") or self.mime_type in ("application/json", "application/xml"):
            try:
                return ResourceContents(uri=uri, mime_type=self.mime_type, text=self.data.decode("utf-8"))
            except UnicodeDecodeError:
                pass
        return ResourceContents(uri=uri, mime_type=self.mime_type, blob=self.base64)

    def _uri(self) -> str:
        from urllib.parse import quote  # here, not at import time (urllib.parse imports ipaddress)

        return f"file:///{quote(self.name or 'file')}"


class Image(Media):
    """An image: a tool result's ``ImageContent`` (see :class:`Media`)."""

    family = "image/"
    __slots__ = ()

    def to_content(self) -> ImageContent:
        """The image as a content block."""
        return ImageContent(data=self.base64, mime_type=self.mime_type)


class Audio(Media):
    """A sound: a tool result's ``AudioContent`` (see :class:`Media`)."""

    family = "audio/"
    __slots__ = ()

    def to_content(self) -> AudioContent:
        """The sound as a content block."""
        return AudioContent(data=self.base64, mime_type=self.mime_type)


class File(Media):
    """A file of any type: a tool result's ``EmbeddedResource`` at ``file:///{name}``
    (see :class:`Media`); ``application/octet-stream`` when nothing tells its type."""

    fallback = "application/octet-stream"
    __slots__ = ()


def _from_extension(path: str) -> str | None:
    known = _EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if known is not None:
        return known
    import mimetypes  # only for a path: it reads the system's tables on first use

    return mimetypes.guess_type(path)[0]
