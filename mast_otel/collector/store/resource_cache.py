"""The store's memory of ``resource`` rows, both ways: a resource's row id at ingest, a row id's resource at export.

Every Export request names its Resource, and nearly all name one of a few; remembering the recent ones spares the
store a lookup per request in each direction. Least recently used entries go first, 4,096 each way. A resource is
keyed by :func:`resource_digest`, the same key the ``resource`` table's unique ``digest`` column holds. The cache
holds no lock: the store calls it under its own.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

__all__ = ["ResourceCache", "resource_digest"]

_SIZE = 4096


def resource_digest(resource: bytes, schema: str) -> bytes:
    """The key of a serialized Resource and its schema URL, in the table and in the cache."""
    return hashlib.blake2b(resource + b"\x00" + schema.encode(), digest_size=16).digest()


class ResourceCache:
    """Recently used ``resource`` rows: digest -> row id, and row id -> (serialized Resource, schema URL)."""

    def __init__(self, size: int = _SIZE) -> None:
        self._size = size
        self._ids: OrderedDict[bytes, int] = OrderedDict()
        self._rows: OrderedDict[int, tuple[bytes, str]] = OrderedDict()

    def id_of(self, digest: bytes) -> int | None:
        found = self._ids.get(digest)
        if found is not None:
            self._ids.move_to_end(digest)
        return found

    def row_of(self, row_id: int) -> tuple[bytes, str] | None:
        found = self._rows.get(row_id)
        if found is not None:
            self._rows.move_to_end(row_id)
        return found

    def remember(self, digest: bytes | None, row_id: int, row: tuple[bytes, str]) -> None:
        """Remember a row read or written; ``digest`` None when it was looked up by id (the id side only)."""
        if digest is not None:
            self._ids[digest] = row_id
            while len(self._ids) > self._size:
                self._ids.popitem(last=False)
        self._rows[row_id] = row
        while len(self._rows) > self._size:
            self._rows.popitem(last=False)

    def clear(self) -> None:
        """Forget everything: rows were deleted, and a remembered id could name a row id SQLite hands out again."""
        self._ids.clear()
        self._rows.clear()
