"""Shared state for several nodes (sessions, event streams, subscriptions).

Empty until its issue lands; listed so that the layering rules already cover it.
"""
