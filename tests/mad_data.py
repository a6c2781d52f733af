"""Where the recorded MAST traces (MAD step lists) come from in tests: a small sample in the repository, the full
files outside it.

The sample (``tests/data/mad/``, 25 records copied unchanged, source and licence in ``tests/data/README.md``) is
what every test needs to pass on a fresh clone. The full files (827 records) live outside the repository: in
``$MAST_OTEL_MAST_DATA/parsers_output`` when that variable is set, else ``../shared/mast-data/parsers_output``
beside the checkout (as in CI). Tests that need them call :func:`full_data_file`, which skips with the reason
when they are absent, or fails when ``MAST_OTEL_REQUIRE_FULL_DATA=1`` (so CI cannot lose them silently).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "mad"
AG2_SAMPLE = SAMPLES / "ag2_sample.json"
METAGPT_SAMPLE = SAMPLES / "metagpt_sample.json"
# Positions of the sampled records in the full files, in sample order.
AG2_SAMPLE_INDICES = (0, 1, 2, 30, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 576)
METAGPT_SAMPLE_INDICES = (0, 1, 2, 3, 4, 5, 6, 74, 85, 120)

DATA_ENV = "MAST_OTEL_MAST_DATA"
REQUIRE_ENV = "MAST_OTEL_REQUIRE_FULL_DATA"


def full_data_dir() -> Path:
    root = os.environ.get(DATA_ENV)
    return (Path(root) if root else ROOT.parent / "shared" / "mast-data") / "parsers_output"


def full_data_file(name: str) -> Path:
    """A full MAD step-list file; skips (or fails under ``MAST_OTEL_REQUIRE_FULL_DATA=1``) when absent."""
    path = full_data_dir() / name
    if not path.is_file():
        message = f"full MAST data not found at {path} (set {DATA_ENV} to the mast-data folder)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path
