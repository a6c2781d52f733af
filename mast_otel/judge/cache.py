"""Verdict cache: a conversation the judge has already paid for is not paid for again.

The key is the hash of what the judge would read (the rendered, redacted transcript and the hints: no span ids,
no nonce) plus the model, the endpoint, the prompt version and the budget, so a redelivered batch or a replayed
recording hits the cache while a change of model or prompt misses it. The value is the validated answers per
chunk, in transcript references, so a hit is mapped onto the *current* spans' ids. Memory (LRU) always; a
directory of JSON files as well when configured, so a restarted collector or a second eval run reuses answers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CachedAnswer", "VerdictCache", "cache_key"]

_log = logging.getLogger(__name__)


def cache_key(*parts: str | int | None) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """The validated answers (one JSON object per chunk) and what they cost when first obtained."""

    answers: tuple[dict[str, Any], ...]
    tokens_in: int
    tokens_out: int

    def to_json(self) -> str:
        return json.dumps({"answers": list(self.answers), "tokens_in": self.tokens_in, "tokens_out": self.tokens_out})

    @classmethod
    def from_json(cls, text: str) -> CachedAnswer:
        data = json.loads(text)
        return cls(tuple(data["answers"]), int(data["tokens_in"]), int(data["tokens_out"]))


class VerdictCache:
    """Thread-safe LRU of :class:`CachedAnswer` by key, optionally backed by ``directory``."""

    def __init__(self, directory: Path | None = None, max_entries: int = 4096) -> None:
        self.directory = directory
        self.max_entries = max_entries
        self._mem: OrderedDict[str, CachedAnswer] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            found = self._mem.get(key)
            if found is not None:
                self._mem.move_to_end(key)
                self.hits += 1
                return found
        found = self._load(key)
        with self._lock:
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            self._put_mem(key, found)
        return found

    def put(self, key: str, answer: CachedAnswer) -> None:
        with self._lock:
            self._put_mem(key, answer)
        if self.directory is not None:
            self._store(key, answer)

    def _put_mem(self, key: str, answer: CachedAnswer) -> None:
        self._mem[key] = answer
        self._mem.move_to_end(key)
        while len(self._mem) > self.max_entries:
            self._mem.popitem(last=False)

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{key}.json"

    def _load(self, key: str) -> CachedAnswer | None:
        if self.directory is None:
            return None
        try:
            return CachedAnswer.from_json(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a corrupt entry is a miss, not a crash
            _log.warning("judge cache entry %s unreadable (%s); ignoring it", key[:12], type(exc).__name__)
            return None

    def _store(self, key: str, answer: CachedAnswer) -> None:
        # Write then rename, so a crash or a concurrent reader never sees half a file.
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(answer.to_json())
            os.replace(tmp, self._path(key))
        except OSError as exc:
            _log.warning("judge cache write failed (%s); continuing without it", exc)

    def keys(self) -> Iterable[str]:
        with self._lock:
            return list(self._mem)
