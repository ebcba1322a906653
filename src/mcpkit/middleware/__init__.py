"""Ready-made middleware for ``Server.use`` (docs/howto/middleware.md): small callable
objects, each one concept, composed in the order they are added (the first outermost).

- :class:`RequestLog`: one structured ``logging`` record per request.
- :class:`Timing`: each request's duration to histogram hooks, and to OpenTelemetry's
  metrics when the ``otel`` extra is in use.
- :class:`RateLimit`: a token bucket per principal, session, client or key of your own
  (:class:`~mcpkit.stores.buckets.InMemoryBuckets`, or Redis for several nodes).
- :class:`ConcurrencyLimit`: at most so many calls in flight per tool or method.
- :class:`ErrorMapping`: exception types to protocol errors or tool errors, masked or not.
- :class:`ResponseCache`: idempotent reads answered from a cache, per principal,
  forgotten when the server announces a change.
"""

from __future__ import annotations

from ..stores.buckets import BucketStore, InMemoryBuckets
from .cache import ResponseCache
from .concurrency import ConcurrencyLimit
from .errors import ErrorMapping, ErrorRule
from .outcome import Outcome
from .rate_limit import RATE_LIMITED, KeyRule, RateLimit
from .request_log import RequestLog
from .timing import Timing, TimingHook

__all__ = [
    "RequestLog",
    "Timing",
    "TimingHook",
    "Outcome",
    "RateLimit",
    "RATE_LIMITED",
    "KeyRule",
    "BucketStore",
    "InMemoryBuckets",
    "ConcurrencyLimit",
    "ErrorMapping",
    "ErrorRule",
    "ResponseCache",
]
