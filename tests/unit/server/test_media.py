"""Images, audio and files (``mcpkit.Image``, ``Audio``, ``File``; server/media.py): the
media type guessed from a path's extension or the bytes' signature, and each as a tool
result, resource contents and a prompt message — in memory and over real HTTP."""

from __future__ import annotations

import base64
import contextlib
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from mcpkit import (
    Audio as AudioMedia,
    AudioContent,
    Client,
    ClientOptions,
    EmbeddedResource,
    File,
    HttpTransport,
    Image,
    ImageContent,
    ResourceContents,
    Server,
    TextContent,
)
from support.eras import ERAS
from support.serving import serve_in_thread

PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0" + bytes(4), "image/jpeg"),
        (b"GIF89a....", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
    ],
)
def test_an_images_type_is_told_by_its_signature(data: bytes, mime: str) -> None:
    image = Image(data)
    assert (image.mime_type, image.to_content()) == (mime, ImageContent(data=base64.b64encode(data).decode(), mime_type=mime))


@pytest.mark.parametrize(
    ("data", "mime"), [(WAV, "audio/wav"), (b"ID3\x04", "audio/mpeg"), (b"OggS\x00", "audio/ogg"), (b"fLaC", "audio/flac")]
)
def test_a_sounds_type_is_told_by_its_signature(data: bytes, mime: str) -> None:
    assert AudioMedia(data).to_content() == AudioContent(data=base64.b64encode(data).decode(), mime_type=mime)


def test_a_paths_extension_tells_the_type_before_the_bytes(tmp_path: pathlib.Path) -> None:
    (tmp_path / "photo.jpg").write_bytes(PNG)  # the name says JPEG: the name wins, as a server says
    assert Image(path=tmp_path / "photo.jpg").mime_type == "image/jpeg"
    (tmp_path / "notes.md").write_text("# hi")
    notes = File(path=str(tmp_path / "notes.md"))
    assert (notes.mime_type, notes.name) == ("text/markdown", "notes.md")
    (tmp_path / "blob").write_bytes(b"\x00\x01")
    assert File(path=tmp_path / "blob").mime_type == "application/octet-stream"
    assert Image(b"????", mime_type="image/x-custom").mime_type == "image/x-custom"


def test_what_cannot_be_made() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Image()
    with pytest.raises(ValueError, match="exactly one"):
        Image(PNG, path="x.png")
    with pytest.raises(ValueError, match=r"give mime_type= \(an image type\)"):
        Image(b"not an image")
    with pytest.raises(ValueError, match=r"give mime_type= \(an image type\)"):
        Image(WAV)  # a sound is not an image
    with pytest.raises(ValueError, match=r"an audio type"):
        AudioMedia(PNG)
    with pytest.raises(FileNotFoundError):
        File(path="/no/such/file")


def media_server(folder: pathlib.Path) -> Server:
    server = Server("media")
    (folder / "data.json").write_text('{"a": 1}')
    (folder / "raw.bin").write_bytes(b"\xff\xfe")

    @server.tool
    def picture() -> Image:
        return Image(PNG)

    @server.tool
    def mixed() -> list[str | Image | AudioMedia]:
        return ["an image and a sound:", Image(PNG), AudioMedia(WAV), TextContent(text="done")]  # type: ignore[list-item]

    @server.tool
    def loose() -> list:  # type: ignore[type-arg]  # a bare list: its schema wraps an array of anything
        return ["a picture:", Image(PNG)]

    @server.tool
    def anything() -> list[Any]:
        return [Image(PNG), TextContent(text="done")]

    @server.tool
    def attachment(name: str) -> File:
        return File(path=folder / name)

    @server.resource("media://picture")
    def picture_resource() -> Image:
        return Image(PNG)

    @server.resource("media://file/{stem}")
    def file_resource(stem: str) -> File:
        return File(path=folder / f"{stem}.json")

    @server.resource("media://bundle")
    def bundle() -> list[Any]:
        return [File(path=folder / "data.json"), AudioMedia(WAV), ResourceContents(uri="media://bundle", text="note")]

    @server.prompt
    def describe() -> list[Any]:
        return ["Describe this picture:", Image(PNG)]

    return server


@contextlib.asynccontextmanager
async def connected(server: Server, kind: str, era: str) -> AsyncIterator[Client]:
    if kind == "memory":
        async with Client(server, ClientOptions(protocol_version=era)) as client:
            yield client
        return
    with serve_in_thread(server.asgi_app()) as port:
        async with Client(HttpTransport(f"http://127.0.0.1:{port}/mcp"), ClientOptions(protocol_version=era)) as client:
            yield client


@pytest.mark.parametrize("kind", [pytest.param("memory", id="memory"), pytest.param("http", id="http", marks=pytest.mark.e2e)])
@pytest.mark.parametrize("era", ERAS)
async def test_media_as_results_contents_and_messages(tmp_path: pathlib.Path, kind: str, era: str) -> None:
    png64, wav64 = base64.b64encode(PNG).decode(), base64.b64encode(WAV).decode()
    async with connected(media_server(tmp_path), kind, era) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all(tools[name].output_schema is None for name in ("picture", "mixed", "attachment"))  # content, not data
        assert (await client.call_tool("picture")).content == [ImageContent(data=png64, mime_type="image/png")]
        assert (await client.call_tool("mixed")).content == [
            TextContent(text="an image and a sound:"),
            ImageContent(data=png64, mime_type="image/png"),
            AudioContent(data=wav64, mime_type="audio/wav"),
            TextContent(text="done"),
        ]
        # a list of anything: the blocks are content, and the declared result as well
        for name, blocks in (
            ("loose", [TextContent(text="a picture:"), ImageContent(data=png64, mime_type="image/png")]),
            ("anything", [ImageContent(data=png64, mime_type="image/png"), TextContent(text="done")]),
        ):
            schema = tools[name].output_schema
            assert schema is not None
            assert schema["properties"]["result"]["type"] == "array"
            result = await client.call_tool(name)
            assert (result.is_error, result.content) == (False, blocks)
            assert result.structured_content == {"result": [msgspec.to_builtins(b) for b in blocks]}
        (text_file,) = (await client.call_tool("attachment", {"name": "data.json"})).content
        assert isinstance(text_file, EmbeddedResource)
        assert (text_file.resource.uri, text_file.resource.mime_type, text_file.resource.text) == (
            "file:///data.json",
            "application/json",
            '{"a": 1}',
        )
        (binary,) = (await client.call_tool("attachment", {"name": "raw.bin"})).content
        assert isinstance(binary, EmbeddedResource)
        assert (binary.resource.mime_type, binary.resource.blob) == ("application/octet-stream", "//4=")
        (picture,) = (await client.read_resource("media://picture")).contents
        assert (picture.uri, picture.mime_type, picture.blob, picture.text) == ("media://picture", "image/png", png64, None)
        (data,) = (await client.read_resource("media://file/data")).contents
        assert (data.uri, data.mime_type, data.text) == ("media://file/data", "application/json", '{"a": 1}')
        assert (await client.read_resource("media://bundle")).contents == [
            ResourceContents(uri="media://bundle", mime_type="application/json", text='{"a": 1}'),
            ResourceContents(uri="media://bundle", mime_type="audio/wav", blob=wav64),
            ResourceContents(uri="media://bundle", text="note"),
        ]
        messages = (await client.get_prompt("describe")).messages
        assert [m.content for m in messages] == [
            TextContent(text="Describe this picture:"),
            ImageContent(data=png64, mime_type="image/png"),
        ]
