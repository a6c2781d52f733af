"""MetaGPT's config, offline: MetaGPT reads ``$METAGPT_PROJECT_ROOT/config/config2.yaml`` when it is imported.

Shared by the MetaGPT tier's conftest and the randomness scenario (tests/program_randomness.py), which runs outside
that conftest: in tests/core, and in a fresh process for the bare ``instrument()`` path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def configure_metagpt() -> None:
    """Write a throwaway config in a temporary ``METAGPT_PROJECT_ROOT`` (MetaGPT also puts its logs and workspace
    there), unless one is set already: the process's first caller decides, so the tier and a scenario agree."""
    if os.environ.get("METAGPT_PROJECT_ROOT"):
        return
    root = Path(tempfile.mkdtemp(prefix="mast-otel-metagpt-"))
    (root / "config").mkdir()
    # Never called: every test builds its own Context (scripted provider or the llama.cpp server).
    (root / "config" / "config2.yaml").write_text(
        'llm: {api_type: "openai", base_url: "http://127.0.0.1:9/v1", api_key: "unused", model: "gpt-4"}\n'
    )
    os.environ["METAGPT_PROJECT_ROOT"] = str(root)
