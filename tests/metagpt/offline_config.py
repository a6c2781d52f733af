"""MetaGPT's config, offline: MetaGPT reads ``$METAGPT_PROJECT_ROOT/config/config2.yaml`` when it is imported.

Shared by the MetaGPT tier's conftest and the randomness scenario (tests/program_randomness.py), which runs outside
that conftest: in tests/core, and in a fresh process for the bare ``instrument()`` path.
"""

from __future__ import annotations

from mast_otel.evaluation.suite_metagpt import ensure_metagpt_config


def configure_metagpt() -> None:
    """An inert config in a temporary ``METAGPT_PROJECT_ROOT`` (MetaGPT also puts its logs and workspace there),
    unless one is set already: the process's first caller decides, so the tier and a scenario agree. The package's
    own setup (the example, the suite and the benchmark use it too), so they all read the same config."""
    ensure_metagpt_config()
