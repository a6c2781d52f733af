"""Content capture: on by default, redacted and capped in-process, and entirely off when asked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from autogen import ConversableAgent

from mast_otel import semconv as sc
from tests.ag2.scenarios import round_robin_group, scripted_agent

SECRETS = [
    "sk-proj-Abc123Def456Ghi789Jkl012Mno345",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]
BEARER = "Bearer tok_live_9f8e7d6c5b4a39281706"


def everything_exported(spans: Any) -> str:
    """Every name, attribute, event and status text of every span, as one string to search."""
    parts = []
    for s in spans.all:
        parts.append(s.name)
        parts.append(json.dumps(dict(s.attributes or {}), default=str))
        for e in s.events:
            parts.append(e.name + json.dumps(dict(e.attributes or {}), default=str))
        parts.append(str(s.status.description))
    return "\n".join(parts)


def test_secrets_in_messages_never_leave_the_process(instrument: Any, spans: Any) -> None:
    leaky = {
        "planner": [f"Use key {SECRETS[0]} and aws {SECRETS[1]}"],
        "coder": [f"curl -H 'Authorization: {BEARER}' with token {SECRETS[2]}"],
        "critic": [f"jwt {SECRETS[3]} api_key=hunter2hunter2 TERMINATE"],
    }
    user, manager, groupchat = round_robin_group(leaky, max_round=10)
    user.initiate_chat(manager, message=f"task with {SECRETS[0]}", silent=True)

    got = spans()
    dump = everything_exported(got)
    for secret in [*SECRETS, BEARER.split()[1], "hunter2hunter2"]:
        assert secret not in dump
    assert "[REDACTED]" in dump
    # the redacted text is still there for the judge, minus the secrets
    assert got.messages[1].attributes[sc.MESSAGE_CONTENT].startswith("Use key [REDACTED]")
    assert got.messages[1].attributes[sc.MESSAGE_REDACTED] is True
    # and the conversation itself is untouched
    assert SECRETS[0] in groupchat.messages[1]["content"]


def test_user_patterns_and_callback(instrument: Any, spans: Any) -> None:
    instrument(redact_patterns=[r"ACME-\d{6}"], redact=lambda text: text.replace("Project Falcon", "[codename]"))
    alice = scripted_agent("alice", ["unused"])
    bob = scripted_agent("bob", ["Order ACME-123456 for Project Falcon"])
    alice.initiate_chat(bob, message="hi", max_turns=1, silent=True)

    content = spans().messages[1].attributes[sc.MESSAGE_CONTENT]
    assert content == "Order [REDACTED] for [codename]"


def test_length_cap_keeps_head_and_tail(instrument: Any, spans: Any) -> None:
    instrument(max_content_length=100)
    long_text = "HEAD " + "x" * 1000 + " TAIL"
    alice = scripted_agent("alice", ["unused"])
    bob = scripted_agent("bob", [long_text])
    alice.initiate_chat(bob, message="hi", max_turns=1, silent=True)

    span = spans().messages[1]
    content = span.attributes[sc.MESSAGE_CONTENT]
    assert len(content) <= 100
    assert content.startswith("HEAD ") and content.endswith(" TAIL") and "chars cut" in content
    assert span.attributes[sc.MESSAGE_TRUNCATED] is True


CONTENT_KEYS = {
    sc.MESSAGE_CONTENT,
    sc.MESSAGE_TOOL_CALLS,
    sc.CONVERSATION_TASK,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.GEN_AI_TOOL_CALL_RESULT,
    sc.TERMINATION_DETAIL,
}


@pytest.mark.parametrize("value", ["false", "NO_CONTENT"])
def test_capture_off_removes_all_content(
    instrument: Any, spans: Any, tracer_provider: Any, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    instrument()
    marker = "UNIQUE-CONTENT-MARKER"
    user, manager, _ = round_robin_group(
        {"planner": [f"{marker} plan"], "coder": [f"{marker} code"], "critic": [f"{marker} ok TERMINATE"]}
    )
    user.initiate_chat(manager, message=f"{marker} task", silent=True)

    executor = ConversableAgent("executor", llm_config=False, human_input_mode="NEVER")
    executor.register_for_execution(name="echo")(lambda text: f"{marker} {text}")
    from mast_otel.recorder import Recorder

    with Recorder(tracer_provider=tracer_provider).conversation("tools"):
        executor.execute_function({"name": "echo", "arguments": json.dumps({"text": marker})}, call_id="c1")

    got = spans()
    assert got.messages and got.tools
    assert marker not in everything_exported(got)
    for s in got.all:
        present = CONTENT_KEYS & set(s.attributes or {})
        # termination detail is AG2's own text, never user content; allow it
        assert present <= {sc.TERMINATION_DETAIL}, (s.name, present)


def test_capture_keyword_wins_over_environment(instrument: Any, spans: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    instrument(capture_content=False)
    alice = scripted_agent("alice", ["unused"])
    bob = scripted_agent("bob", ["secret plan"])
    alice.initiate_chat(bob, message="hi", max_turns=1, silent=True)
    assert all(sc.MESSAGE_CONTENT not in (s.attributes or {}) for s in spans().messages)
