"""Shared state behind small protocols: the subscription bus, the task store, the session
store; in-memory implementations for one process, and ``stores.redis`` for several nodes
(docs/deploy.md). Stores know no transport, server or client.
"""
