"""The transport's tunables, as its parts read them.

The parts are handed the :class:`~mcpkit.transports.http.client.transport.HttpTransport`
itself as their :class:`Settings` and read a value each time they need it, so changing a
public attribute of a live transport (``transport.headers``, say, to refresh a token)
takes effect on the next HTTP request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import httpx

__all__ = ["Settings"]


class Settings(Protocol):
    """The public attributes of ``HttpTransport`` that its parts consult."""

    @property
    def url(self) -> str: ...

    @property
    def headers(self) -> dict[str, str]: ...

    @property
    def auth(self) -> httpx.Auth | None: ...

    @property
    def connect_timeout(self) -> float: ...

    @property
    def max_message_size(self) -> int: ...

    @property
    def max_reconnects(self) -> int: ...

    @property
    def reconnect_delay(self) -> float: ...

    @property
    def notification_timeout(self) -> float: ...

    @property
    def delete_timeout(self) -> float: ...

    @property
    def listen(self) -> bool: ...
