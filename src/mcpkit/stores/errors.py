"""The error every shared store raises: :class:`StoreUnavailable` (docs/deploy.md).

Its own module, apart from any one store: the dispatcher, the task manager, the HTTP
app and the OAuth proxy catch it from whichever store they use, and a server that
imports it does not load the session store's records with it (start-up cost).
"""

from __future__ import annotations

__all__ = ["StoreUnavailable"]


class StoreUnavailable(Exception):
    """A shared store cannot be reached (Redis is down or too slow): the operation did not
    happen. The HTTP app answers 503 with ``Retry-After`` for what needs the store."""
