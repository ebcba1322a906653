"""The server options that request handling reads, kept in one shared object.

``Server(...)`` validates its options and puts those that serving reads into one
:class:`Settings`, which the dispatcher, the feature handlers and the task manager all
hold. The ``Server`` attributes of the same names are :class:`Setting` descriptors over
it, so that ``server.mask_tool_errors = True`` changes what the next request sees.

One option is stored as what it amounts to: ``eras`` (``"dual"``, ``"modern"``,
``"legacy"``, as users say it) is resolved, when it is set, into the era policies the
server serves (:attr:`Settings.policies`), which is all the dispatcher asks — it never
compares era names.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Final, Generic, Literal, TypeVar, overload

from ..protocol.eras import LEGACY, MODERN, EraPolicy
from ..protocol.request_state import StateSealer
from ..runtime.peer import check_timeout

__all__ = ["Settings", "Setting", "Eras", "check_limit"]

T = TypeVar("T")

#: What ``Server(eras=...)`` accepts: both eras, or one of them.
Eras = Literal["dual", "modern", "legacy"]
#: Each ``eras`` value -> the policies of the eras it serves, newest era first.
_POLICIES: Final[dict[str, tuple[EraPolicy, ...]]] = {"dual": (MODERN, LEGACY), "modern": (MODERN,), "legacy": (LEGACY,)}
#: Each object whose :class:`Setting` attributes are kept in a Settings -> that Settings.
_HELD: Final[weakref.WeakKeyDictionary[Any, Settings]] = weakref.WeakKeyDictionary()


def check_limit(seconds: float | None) -> float | None:
    """A time limit in seconds (None: none). Raises ``ValueError`` unless positive
    and finite."""
    return None if seconds is None else check_timeout(seconds)


class Settings:
    """The server options request handling reads (validated by ``Server``)."""

    _eras: Eras

    __slots__ = (
        "_eras",
        "ask_timeout",
        "cache_scope",
        "cache_ttl_ms",
        "expose_internal_errors",
        "mask_tool_errors",
        "max_error_text",
        "max_listen_bytes",
        "max_listens",
        "max_listens_per_principal",
        "max_uri_length",
        "page_size",
        "policies",
        "state_sealer",
        "tool_timeout",
    )

    def __init__(
        self,
        *,
        eras: Eras = "dual",
        expose_internal_errors: bool = False,
        mask_tool_errors: bool = False,
        max_error_text: int = 1024,
        page_size: int = 1000,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        tool_timeout: float | None = None,
        ask_timeout: float = 300.0,
        state_sealer: StateSealer | None = None,
        max_uri_length: int = 16_384,
        max_listen_bytes: int = 65_536,
        max_listens: int = 1000,
        max_listens_per_principal: int = 32,
    ) -> None:
        """Raises ``ValueError`` for an ``eras`` that is none of the three."""
        #: The era policies served, newest era first (set through :attr:`eras`).
        self.policies: tuple[EraPolicy, ...] = ()
        self.eras = eras
        self.expose_internal_errors = expose_internal_errors
        self.mask_tool_errors = mask_tool_errors
        self.max_error_text = max_error_text
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        #: Seconds a tool may run unless it sets its own limit (None: no limit).
        self.tool_timeout = tool_timeout
        #: Seconds a handler waits for the client's answer to a legacy-era question.
        self.ask_timeout = ask_timeout
        #: The longest URI a request may name (characters): ``resources/read``,
        #: ``resources/subscribe``, each of a ``subscriptions/listen``'s resources.
        self.max_uri_length = max_uri_length
        #: The largest ``subscriptions/listen`` params (bytes of JSON): what a listen holds.
        self.max_listen_bytes = max_listen_bytes
        #: ``subscriptions/listen`` requests open at once in this process, and per principal.
        self.max_listens = max_listens
        self.max_listens_per_principal = max_listens_per_principal
        #: Signs and checks modern-era ``requestState`` (set by ``Server``).
        self.state_sealer = state_sealer if state_sealer is not None else StateSealer(os.urandom(32), 600.0)

    @property
    def eras(self) -> Eras:
        """Which eras are served, as ``Server(eras=...)`` says it; setting it resolves
        :attr:`policies`. Raises ``ValueError`` when set to anything else."""
        return self._eras

    @eras.setter
    def eras(self, value: Eras) -> None:
        policies = _POLICIES.get(value) if isinstance(value, str) else None
        if policies is None:
            raise ValueError("eras must be 'dual', 'modern' or 'legacy'")
        self._eras = value
        self.policies = policies

    def hold(self, owner: Any) -> None:
        """Keep ``owner``'s :class:`Setting` attributes here from now on (for as long as
        ``owner`` lives)."""
        _HELD[owner] = self


class Setting(Generic[T]):
    """A ``Server`` attribute kept in its :class:`Settings` (the one that holds the
    server: :meth:`Settings.hold`), where request handling reads it: changing the
    attribute changes what later requests see."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Setting[T]: ...

    @overload
    def __get__(self, obj: Any, objtype: type | None = None) -> T: ...

    def __get__(self, obj: Any | None, objtype: type | None = None) -> T | Setting[T]:
        if obj is None:
            return self
        return getattr(_HELD[obj], self.name)  # type: ignore[no-any-return]

    def __set__(self, obj: Any, value: T) -> None:
        setattr(_HELD[obj], self.name, value)
