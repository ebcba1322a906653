"""The transport's tunables, as its parts read them.

The parts are handed the :class:`~mcpkit.transports.http.transport.HttpTransport`
itself as their :class:`Settings` and read a value each time they need it, so changing a
public attribute of a live transport (``transport.headers``, say, to refresh a token)
takes effect on the next HTTP request. The checks of the constructors' arguments are
here too.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

from ...restart import RECONNECT, RestartPolicy

if TYPE_CHECKING:
    import httpx

__all__ = ["Settings", "check_seconds", "check_count", "reconnect_policy"]


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


def check_seconds(name: str, value: object, *, zero: bool = False) -> float:
    """``value`` as seconds: a finite number, positive (or 0 with ``zero``). Raises
    ``TypeError`` for a non-number, ``ValueError`` out of range, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be {'at least 0' if zero else 'positive'} and finite, not {value!r}")
    return float(value)


def check_count(name: str, value: object, *, least: int) -> int:
    """``value`` as an integer of at least ``least``. Raises ``TypeError`` for a
    non-integer, ``ValueError`` out of range, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, not {value!r}")
    return value


def reconnect_policy(reconnect: object) -> RestartPolicy | None:
    """The policy that ``HttpTransport(reconnect=...)`` names: ``True`` the default
    (:data:`~mcpkit.transports.restart.RECONNECT`), ``False`` none, or the
    :class:`~mcpkit.RestartPolicy` given. Raises ``TypeError`` for anything else."""
    if reconnect is True:
        return RECONNECT
    if reconnect is False:
        return None
    if isinstance(reconnect, RestartPolicy):
        return reconnect
    raise TypeError(f"reconnect must be True, False or a RestartPolicy, not {reconnect!r}"[:200])
