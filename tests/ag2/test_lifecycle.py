"""instrument()/uninstrument(): class-level, idempotent, import-order independent, and invisible to AG2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from autogen import ConversableAgent, GroupChat
from autogen.events.agent_events import TerminationEvent
from autogen.io.base import IOStream
from opentelemetry.instrumentation.utils import suppress_instrumentation

import mast_otel
from mast_otel import semconv as sc
from tests.ag2.scenarios import round_robin_group, scripted_agent

ROOT = Path(__file__).resolve().parents[2]
PATCHED = [
    (ConversableAgent, "send"),
    (ConversableAgent, "a_send"),
    (ConversableAgent, "generate_reply"),
    (ConversableAgent, "a_generate_reply"),
    (ConversableAgent, "initiate_chat"),
    (ConversableAgent, "execute_function"),
    (GroupChat, "select_speaker"),
    (GroupChat, "a_select_speaker"),
]


def test_uninstrument_restores_every_method(instrument: Any, spans: Any, tracer_provider: Any) -> None:
    mast_otel.uninstrument()
    originals = {(cls, name): cls.__dict__[name] for cls, name in PATCHED}
    io_default = IOStream.__dict__["get_default"]
    mast_otel.instrument(tracer_provider=tracer_provider)
    assert all(hasattr(cls.__dict__[name], "__wrapped__") for cls, name in PATCHED)

    assert "__init__" in vars(TerminationEvent), "events are read where they are built"
    assert IOStream.__dict__["get_default"] is io_default, "the program's IOStream machinery is never patched"

    mast_otel.uninstrument()
    for (cls, name), original in originals.items():
        assert cls.__dict__[name] is original, f"{cls.__name__}.{name} not restored"
    assert "__init__" not in vars(TerminationEvent), "an inherited method is restored by removing the wrapper"
    user, manager, _ = round_robin_group({"a": ["x"], "b": ["y TERMINATE"]})
    user.initiate_chat(manager, message="hi", silent=True)
    assert spans().all == []
    from autogen.io import IOConsole

    assert isinstance(IOConsole().get_default(), IOStream.get_default().__class__), "static method stays static"


def test_instrument_is_idempotent(instrument: Any, spans: Any, tracer_provider: Any) -> None:
    mast_otel.instrument(tracer_provider=tracer_provider)
    mast_otel.instrument(tracer_provider=tracer_provider)
    user, manager, groupchat = round_robin_group({"a": ["x"], "b": ["y TERMINATE"]})
    user.initiate_chat(manager, message="hi", silent=True)
    got = spans()
    assert len(got.roots) == 1
    assert len(got.messages) == len(groupchat.messages)


def test_agents_created_before_instrument_are_traced(span_exporter: Any, tracer_provider: Any, spans: Any) -> None:
    user, manager, groupchat = round_robin_group({"a": ["x"], "b": ["y TERMINATE"]})
    mast_otel.instrument(tracer_provider=tracer_provider)
    try:
        user.initiate_chat(manager, message="hi", silent=True)
    finally:
        mast_otel.uninstrument()
    got = spans()
    assert len(got.messages) == len(groupchat.messages)
    assert len(got.handoffs) == len(groupchat.messages) - 1


def test_exceptions_propagate_unchanged(instrument: Any, spans: Any) -> None:
    class Boom(RuntimeError):
        pass

    error = Boom("model exploded")
    alice = scripted_agent("alice", ["unused"])
    bob = scripted_agent("bob", ["unused"])

    def explode(*_: Any, **__: Any) -> Any:
        raise error

    bob.register_reply([ConversableAgent, None], explode, position=0)
    with pytest.raises(Boom) as raised:
        alice.initiate_chat(bob, message="hi", silent=True)
    assert raised.value is error

    got = spans()
    assert got.root.status.status_code.name == "ERROR"
    assert got.root.attributes[sc.TERMINATION_REASON] == sc.TERMINATION_ERROR
    assert "model exploded" in got.root.attributes[sc.TERMINATION_DETAIL]
    (bob_turn,) = [t for t in got.turns if t.attributes[sc.GEN_AI_AGENT_NAME] == "bob"]
    assert bob_turn.status.status_code.name == "ERROR"
    assert [e.name for e in bob_turn.events] == ["exception"]


def test_suppressed_instrumentation_records_nothing(instrument: Any, spans: Any) -> None:
    user, manager, _ = round_robin_group({"a": ["x"], "b": ["y TERMINATE"]})
    with suppress_instrumentation():
        user.initiate_chat(manager, message="hi", silent=True)
    assert spans().all == []


def test_the_program_sees_the_same_results(instrument: Any) -> None:
    replies = {"a": ["x1", "x2"], "b": ["y1", "y2 TERMINATE"]}
    user, manager, groupchat = round_robin_group(replies, max_round=8)
    traced = user.initiate_chat(manager, message="hi", silent=True)
    mast_otel.uninstrument()
    user2, manager2, groupchat2 = round_robin_group(replies, max_round=8)
    plain = user2.initiate_chat(manager2, message="hi", silent=True)
    assert traced.chat_history == plain.chat_history
    assert groupchat.messages == groupchat2.messages


SCRIPT = textwrap.dedent(
    """
    import json, sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import mast_otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert "autogen" not in sys.modules
    mast_otel.instrument(tracer_provider=provider)   # before AG2 is imported

    from tests.ag2.scenarios import round_robin_group
    user, manager, groupchat = round_robin_group({"a": ["x"], "b": ["y TERMINATE"]})
    user.initiate_chat(manager, message="hi", silent=True)
    print(json.dumps({
        "messages": len(groupchat.messages),
        "types": [s.attributes.get("mast.span.type") for s in exporter.get_finished_spans()],
    }))
    """
)


def test_instrument_before_import() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["types"].count("message") == result["messages"]
    assert result["types"].count("conversation") == 1
    assert result["types"].count("handoff") == result["messages"] - 1
