"""A MetaGPT release that renamed a hooked method: every MetaGPT hook removed in turn, after and before MetaGPT's
import. mast-otel leaves MetaGPT unpatched (all hooks or none, docs/robustness.md), never raises, and the team
gives what it gives without mast-otel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.metagpt.conftest import SKIP_REASON

pytest.importorskip("metagpt", reason=SKIP_REASON)


from tests.fault_injection import hook_fault_tests


def program() -> dict[str, Any]:
    """A three-role team on the scripted provider: MetaGPT's history and each role's memory."""
    from tests.metagpt.scenarios import IDEA, scripted_context, scripted_provider, software_team

    with scripted_provider():
        team = software_team(scripted_context())
        history = asyncio.run(team.run(n_round=5, idea=IDEA))
    memories = {r.name: [(m.content, m.cause_by) for m in r.rc.memory.get()] for r in team.env.roles.values()}
    return {"history": history, "memories": memories}


# Each hook removed in turn, after and before the import: the program is what it is without mast-otel.
test_hook_missing_after_import, test_hook_missing_before_import = hook_fault_tests(
    "metagpt", "metagpt",
    "tests.metagpt.test_hook_faults:program", "mast_otel.integrations.metagpt:HOOKS",
)
