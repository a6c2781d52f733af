"""Bearer-token check shared by both receivers (constant-time, never logs the token)."""

from __future__ import annotations

import hmac

__all__ = ["bearer_ok"]


def bearer_ok(header: str | None, token: str | None) -> bool:
    """True when no token is configured, or ``header`` is ``Bearer <token>`` (scheme case-insensitive)."""
    if token is None:
        return True
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())
