"""The examples run offline and yield the spans their docstrings promise, failure modes included."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from examples import ag2_group_api, ag2_group_chat
from mast_otel import semconv as sc
from tests.span_query import Spans, attr

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


Read = Callable[[], Spans]


def _pairs(handoffs: list[ReadableSpan]) -> list[tuple[object, object, object]]:
    return [(attr(h, sc.HANDOFF_FROM), attr(h, sc.HANDOFF_TO), attr(h, sc.HANDOFF_REASON)) for h in handoffs]


# -- classic GroupChat ------------------------------------------------------------------
def test_group_chat_runs_into_max_round_repeating_itself(spans: Read) -> None:
    ag2_group_chat.run(silent=True)
    got = spans()

    root = got.root
    assert root.name == "invoke_workflow chat_manager"
    assert attr(root, sc.MAST_FRAMEWORK) == "ag2"
    assert attr(root, sc.CONVERSATION_TASK) == ag2_group_chat.TASK
    # 1.5 / 3.1: cut off by the round limit, never terminated on purpose
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    assert attr(root, sc.CONVERSATION_ROUNDS) == attr(root, sc.CONVERSATION_MAX_ROUNDS) == ag2_group_chat.MAX_ROUND

    senders = [attr(m, sc.MESSAGE_SENDER) for m in got.messages]
    assert senders == ["user", "planner", "coder", "critic", "planner", "coder", "critic", "planner"]
    assert all("TERMINATE" not in str(attr(m, sc.MESSAGE_CONTENT)) for m in got.messages)
    # 1.3: the same message sent again word for word, by the coder, the critic and (its plan) the planner
    repeated = Counter((attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_CONTENT)) for m in got.messages)
    assert {sender for (sender, _), n in repeated.items() if n > 1} == {"coder", "critic", "planner"}

    assert _pairs(got.handoffs) == [(a, b, sc.HANDOFF_ROUND_ROBIN) for a, b in pairwise(senders)]
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in sorted(got.turns, key=lambda t: t.start_time or 0)] == senders[1:]


# -- group API ----------------------------------------------------------------------------
EXPECTED_HANDOFFS = [
    ("_User", "planner", sc.HANDOFF_INITIAL),
    ("planner", "_Group_Tool_Executor", sc.HANDOFF_TOOL_CALL),
    ("_Group_Tool_Executor", "coder", sc.HANDOFF_LLM_CONDITION),
    ("coder", "_Group_Tool_Executor", sc.HANDOFF_TOOL_CALL),
    ("_Group_Tool_Executor", "coder", sc.HANDOFF_TOOL_RETURN),
    ("coder", "critic", sc.HANDOFF_CONTEXT_CONDITION),
    ("critic", sc.HANDOFF_TO_TERMINATE, sc.HANDOFF_AFTER_WORK),
]


def test_group_api_handoffs_tools_and_terminate_target(spans: Read) -> None:
    ag2_group_api.run()
    got = spans()

    root = got.root
    assert root.name == "invoke_workflow group_chat DefaultPattern"
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_HANDOFF
    assert attr(root, sc.CONVERSATION_MAX_ROUNDS) == ag2_group_api.MAX_ROUNDS

    handoffs = _pairs(got.handoffs)
    # Every handoff and reason but the OnCondition's (see the next test).
    assert [h for i, h in enumerate(handoffs) if i != 2] == [h for i, h in enumerate(EXPECTED_HANDOFFS) if i != 2]
    assert handoffs[2][:2] == EXPECTED_HANDOFFS[2][:2]

    tools = {attr(t, sc.GEN_AI_TOOL_NAME): t for t in got.tools}
    assert set(tools) == {"transfer_to_coder_1", "submit_answer"}
    assert attr(tools["submit_answer"], sc.GEN_AI_TOOL_CALL_ARGUMENTS) == '{"answer": "31"}'

    kinds = [(attr(m, sc.MESSAGE_SENDER), attr(m, sc.MESSAGE_KIND)) for m in got.messages]
    assert kinds == [
        ("_User", sc.KIND_MESSAGE),
        ("planner", sc.KIND_TOOL_CALL),
        ("_Group_Tool_Executor", sc.KIND_TOOL_RESULT),
        ("coder", sc.KIND_TOOL_CALL),
        ("_Group_Tool_Executor", sc.KIND_TOOL_RESULT),
        ("coder", sc.KIND_MESSAGE),
        ("critic", sc.KIND_MESSAGE),
    ]
    # 3.2: the critic approves an answer nobody ran (no tool call or code execution between submit and approval)
    last = got.messages[-1]
    assert "Approved" in str(attr(last, sc.MESSAGE_CONTENT))
    assert [attr(t, sc.GEN_AI_AGENT_NAME) for t in got.turns].count("critic") == 1


def test_group_api_oncondition_handoff_is_an_llm_condition(spans: Read) -> None:
    ag2_group_api.run()
    assert _pairs(spans().handoffs)[2] == EXPECTED_HANDOFFS[2]


# -- as scripts -----------------------------------------------------------------------------
@pytest.mark.parametrize("script", ["ag2_group_chat.py", "ag2_group_api.py"])
def test_runs_as_a_script_printing_spans(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), "--console"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES.parent.parent,  # not the repository: the script must find its helpers on its own
        env={"PATH": "/usr/bin:/bin", "MAST_OTEL_EXAMPLE_BASE_URL": ""},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("invoke_workflow ") for line in lines)
    assert any(line.startswith("handoff ") and "reason=" in line for line in lines)
    assert any(line.startswith("message ") for line in lines)


# -- against a real server ----------------------------------------------------------------------
@pytest.mark.integration
def test_group_api_against_a_real_llm(spans: Read, llama: object) -> None:
    """Gemma 270M (a base model) will not call tools: the after-work targets carry the run to the end."""
    ag2_group_api.run(base_url=llama.base_url, model=llama.model)  # type: ignore[attr-defined]
    got = spans()
    assert attr(got.root, sc.TERMINATION_REASON) == sc.TERMINATION_HANDOFF
    handoffs = _pairs(got.handoffs)
    assert handoffs[0] == ("_User", "planner", sc.HANDOFF_INITIAL)
    assert handoffs[-1][1:] == (sc.HANDOFF_TO_TERMINATE, sc.HANDOFF_AFTER_WORK)
    assert len(got.messages) >= 4
