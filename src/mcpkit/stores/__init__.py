"""Shared state behind small protocols: the subscription bus, the task store, the session
store, the event store (resumable SSE streams); in-memory implementations for one
process, and ``stores.redis`` for several nodes (docs/deploy.md). Stores know no
transport, server or client; the registry of their listeners is written once
(:mod:`.listeners`).
"""
