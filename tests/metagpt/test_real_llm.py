"""The same team against a real OpenAI-compatible server (llama.cpp + Gemma 3 270M, a base model).

The model's words are not asserted on, only the structure MetaGPT's own record fixes: every publish has its message
span in order, every routed delivery its handoff, turns and messages are parented right while real network calls
interleave the roles, and the run ends idle once the pipeline has run through.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.metagpt.conftest import SKIP_REASON
from tests.span_query import attr

pytest.importorskip("metagpt", reason=SKIP_REASON)

from mast_otel import semconv as sc
from tests.metagpt.record import assert_matches_metagpt
from tests.metagpt.scenarios import IDEA, server_context, software_team

pytestmark = pytest.mark.integration


async def test_pipeline_against_llama_cpp(instrumentor: Any, llama: Any, spans: Any) -> None:
    team = software_team(server_context(llama.base_url, llama.model))
    history = await team.run(n_round=6, idea=IDEA)

    assert history == team.env.history
    got = spans()
    assert_matches_metagpt(got, team.env)
    assert [attr(m, sc.MESSAGE_SENDER) for m in got.messages] == ["Human", "Alice", "Bob", "Carol"]
    root = got.root
    # a real call yields to the event loop, so each round runs one step: 3 rounds acting + 1 reading the review
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_IDLE
    assert attr(root, sc.TERMINATION_DETAIL) == "every role idle after 4 of 6 rounds"


async def test_concurrent_roles_against_llama_cpp(instrumentor: Any, llama: Any, spans: Any) -> None:
    team = software_team(server_context(llama.base_url, llama.model), parallel=True, cycle=True)
    await team.run(n_round=3, idea=IDEA)

    got = spans()
    assert_matches_metagpt(got, team.env)  # includes: each message is a child of its own role's turn
    first_round = sorted(got.turns, key=lambda t: t.start_time)[:2]
    assert {attr(t, sc.GEN_AI_AGENT_NAME) for t in first_round} == {"Alice", "Bob"}
    a, b = first_round
    assert a.start_time < b.end_time and b.start_time < a.end_time, "both roles were in their LLM call at once"
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
