"""The key set (JWKS and introspection) of tests/support/auth.py, for every test here."""

from __future__ import annotations

from support.auth import keys

__all__ = ["keys"]
