"""Framework tests skip where their framework is not installed, and fail in their own nox session if it is not."""

from __future__ import annotations

import importlib
import os

import pytest


def framework(session: str, *modules: str) -> None:
    """Skip the calling module unless every module imports; in ``nox -s SESSION`` a missing one fails instead."""
    if os.environ.get("MAST_OTEL_REQUIRE_FRAMEWORK") == session:
        for name in modules:
            importlib.import_module(name)  # a broken install must fail, not skip
        return
    for name in modules:
        pytest.importorskip(name, reason=f"{name} is not installed here; its environment: nox -s {session}")
