"""The eval's per-mode bar chart as a PNG: matplotlib when installed (the ``judge`` extra), else a tiny writer.

The fallback needs nothing but ``zlib``: grouped bars (precision, recall, F1) per mode on a 0-1 grid, mode ids
under the bars in a 3x5 pixel font. It exists so ``mast-otel eval`` always writes its chart, even in a minimal
install.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["write_chart"]

Series = Mapping[str, Sequence[float | None]]  # label -> one value per mode
_COLORS = [(76, 114, 176), (221, 132, 82), (85, 168, 104), (196, 78, 82)]


def write_chart(path: Path, modes: Sequence[str], series: Series, title: str) -> str:
    """Write the chart; returns which writer was used ("matplotlib" or "builtin")."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        path.write_bytes(_png_bars(modes, series))
        return "builtin"
    fig, ax = plt.subplots(figsize=(max(6.0, len(modes) * 0.7), 3.6), dpi=120)
    width = 0.8 / max(len(series), 1)
    for k, (label, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(modes))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=label)
    ax.set_xticks(range(len(modes)), list(modes))
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncols=len(series))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return "matplotlib"


# 3x5 glyphs for what mode ids need: digits and the dot. Each row is 3 bits, top row first.
_FONT = {
    "0": (7, 5, 5, 5, 7), "1": (2, 6, 2, 2, 7), "2": (7, 1, 7, 4, 7), "3": (7, 1, 7, 1, 7), "4": (5, 5, 7, 1, 1),
    "5": (7, 4, 7, 1, 7), "6": (7, 4, 7, 5, 7), "7": (7, 1, 1, 1, 1), "8": (7, 5, 7, 5, 7), "9": (7, 5, 7, 1, 7),
    ".": (0, 0, 0, 0, 2),
}  # fmt: skip


def _png_bars(modes: Sequence[str], series: Series, scale: int = 2) -> bytes:
    group, bar, height, pad = 36, 8, 200, 20
    w, h = pad * 2 + group * len(modes), height + pad * 2 + 8 * scale
    px = [[(255, 255, 255)] * w for _ in range(h)]

    def rect(x0: int, y0: int, x1: int, y1: int, color: tuple[int, int, int]) -> None:
        for y in range(max(y0, 0), min(y1, h)):
            row = px[y]
            for x in range(max(x0, 0), min(x1, w)):
                row[x] = color

    for tick in range(0, 11, 2):  # grid at 0, 0.2, ... 1.0
        y = pad + height - tick * height // 10
        rect(pad, y, w - pad, y + 1, (220, 220, 220))
    for i, mode_id in enumerate(modes):
        x = pad + i * group + 2
        for k, values in enumerate(series.values()):
            v = max(0.0, min(1.0, values[i] or 0.0))
            rect(x + k * bar, pad + height - int(v * height), x + (k + 1) * bar - 1, pad + height,
                 _COLORS[k % len(_COLORS)])  # fmt: skip
        cx = x
        for ch in mode_id:
            for r, bits in enumerate(_FONT.get(ch, (0,) * 5)):
                for c in range(3):
                    if bits >> (2 - c) & 1:
                        y0 = pad + height + 4 + r * scale
                        rect(cx + c * scale, y0, cx + (c + 1) * scale, y0 + scale, (0, 0, 0))
            cx += 4 * scale
    raw = b"".join(b"\x00" + bytes(v for p in row for v in p) for row in px)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
