"""Instrumentation never changes the program: each AG2 conversation runs plain, then instrumented, then
instrumented with every recorder entry point broken, and what the program can observe must be identical.

Observed (the program's view, never our spans): return values (ChatResult fields, the group API's tuple), every
agent's chat history, the group chat's message list, everything printed and every event sent to the program's
own IOStream, exceptions (type, text, and that the object caught is the object raised), and what
``IOStream.get_default()`` gives the program inside a reply (``is``, ``isinstance``, ``==``, attribute set).
Only run-unique noise is normalised: event UUIDs, object addresses in reprs, and the scripted client's
process-wide tool-call ids.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, TerminateTarget
from autogen.agentchat.group.patterns import DefaultPattern
from autogen.io.base import IOStream
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mast_otel
from examples import _scripted
from mast_otel._safety import reset_recording_failures
from tests.ag2.scenarios import is_terminate, round_robin_group, scripted_agent
from tests.fault_injection import break_recorder

Observation = dict[str, Any]


class ProgramStream:
    """The program's own IOStream: keeps what AG2 prints and sends, answers input with "exit"."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        self.out.append(sep.join(map(str, objects)) + end)

    def send(self, message: Any) -> None:
        self.out.append(f"{type(message).__name__}: {message}")
        message.print(self.print)

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        self.out.append(f"input: {prompt}")
        return "exit"


class ProgramError(Exception):
    """An exception the program raises inside a reply function and expects to catch, as the same object."""


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _plain(value: Any) -> Any:
    """A comparable, run-independent rendering of what the program got."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, ConversableAgent):
        return f"<agent {value.name}>"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return _ADDRESS.sub(" at 0x", _UUID.sub("<uuid>", value)) if isinstance(value, str) else value
    if hasattr(value, "chat_history"):  # ChatResult
        return {k: _plain(getattr(value, k)) for k in ("chat_history", "summary", "cost", "human_input")}
    if hasattr(value, "to_dict"):  # ContextVariables
        return _plain(value.to_dict())
    return f"<{type(value).__name__}>"


def _histories(*agents: ConversableAgent) -> Any:
    return {a.name: {other.name: _plain(msgs) for other, msgs in a.chat_messages.items()} for a in agents}


def _stream_checks(stream: ProgramStream, seen: list[Any]) -> Callable[..., tuple[bool, Any]]:
    """A reply function the program registers: it inspects IOStream.get_default() as AG2's own tests do."""

    def check(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> tuple[bool, Any]:
        got = IOStream.get_default()
        seen.append([got is stream, isinstance(got, ProgramStream), got == stream, type(got).__name__])
        got.marker = f"set by {recipient.name}"  # a plain attribute set on the program's own object
        seen.append(stream.__dict__.get("marker"))
        return False, None

    return check


# -- scenarios: each builds fresh agents, runs, and returns what the program observed ---------------------------
def two_agent_with_tools() -> Observation:
    stream = ProgramStream()
    seen: list[Any] = []
    tool_call = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    broken_call = {"tool_calls": [{"name": "add", "arguments": {"a": "x", "b": 3}}]}
    assistant = scripted_agent("assistant", [tool_call, broken_call, "The sum is 5. TERMINATE"])
    executor = ConversableAgent("executor", llm_config=False, human_input_mode="NEVER", is_termination_msg=is_terminate)

    def add(a: int, b: int) -> int:
        return a + b

    executor.register_for_execution(name="add")(add)
    assistant.register_for_llm(name="add", description="add two ints")(add)
    assistant.register_reply([ConversableAgent, None], _stream_checks(stream, seen), position=0)
    with IOStream.set_default(stream):  # type: ignore[arg-type]
        result = executor.initiate_chat(assistant, message="Add 2 and 3", max_turns=4)
        after = IOStream.get_default() is stream
    return {"result": _plain(result), "histories": _histories(assistant, executor), "out": _plain(stream.out),
            "seen": seen, "after": after}  # fmt: skip


def async_two_agent() -> Observation:
    stream = ProgramStream()
    alice = scripted_agent("alice", ["Hi Bob.", "Bye. TERMINATE"])
    bob = scripted_agent("bob", ["Hi Alice.", "Bye."], is_termination_msg=is_terminate)

    async def main() -> Any:
        with IOStream.set_default(stream):  # type: ignore[arg-type]
            return await bob.a_initiate_chat(alice, message="Hello", max_turns=3)

    result = asyncio.run(main())
    return {"result": _plain(result), "histories": _histories(alice, bob), "out": _plain(stream.out)}


def nested_chat() -> Observation:
    stream = ProgramStream()
    writer = scripted_agent("writer", ["Draft: hello world"])
    lead = scripted_agent("lead", ["unused"])
    boss = scripted_agent("boss", ["Thanks. TERMINATE"])
    lead.register_nested_chats(
        [{"recipient": writer, "message": "Write a draft.", "max_turns": 1, "summary_method": "last_msg"}],
        trigger=boss,
    )
    with IOStream.set_default(stream):  # type: ignore[arg-type]
        result = boss.initiate_chat(lead, message="Get me a draft.", max_turns=2)
    return {"result": _plain(result), "histories": _histories(writer, lead, boss), "out": _plain(stream.out)}


def group_chat_round_robin() -> Observation:
    stream = ProgramStream()
    replies = {"planner": ["Plan it."], "coder": ["6*7 = 42"], "critic": ["Verified. TERMINATE"]}
    user, manager, groupchat = round_robin_group(replies, max_round=10)
    with IOStream.set_default(stream):  # type: ignore[arg-type]
        result = user.initiate_chat(manager, message="What is 6*7?")
    return {"result": _plain(result), "messages": _plain(groupchat.messages),
            "histories": _histories(user, manager, *groupchat.agents), "out": _plain(stream.out)}  # fmt: skip


def group_api_pattern() -> Observation:
    stream = ProgramStream()
    planner = scripted_agent("planner", ["Plan it."])
    coder = scripted_agent("coder", ["Code done."])
    critic = scripted_agent("critic", ["Approved."])
    planner.handoffs.set_after_work(AgentTarget(coder))
    coder.handoffs.set_after_work(AgentTarget(critic))
    critic.handoffs.set_after_work(TerminateTarget())
    pattern = DefaultPattern(initial_agent=planner, agents=[planner, coder, critic],
                             group_manager_args={"llm_config": False})  # fmt: skip
    with IOStream.set_default(stream):  # type: ignore[arg-type]
        result, context, last = initiate_group_chat(pattern, messages="Build it", max_rounds=10)
    return {"result": _plain(result), "context": _plain(context), "last": last.name,
            "histories": _histories(planner, coder, critic), "out": _plain(stream.out)}  # fmt: skip


def exception_from_a_reply() -> Observation:
    stream = ProgramStream()
    raised = ProgramError("the reply function gave up")
    alice = scripted_agent("alice", ["Hi."])
    bob = scripted_agent("bob", ["never"])

    def explode(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> tuple[bool, Any]:
        raise raised

    bob.register_reply([ConversableAgent, None], explode, position=0)
    with IOStream.set_default(stream):  # type: ignore[arg-type]
        try:
            alice.initiate_chat(bob, message="Hello", max_turns=2)
        except ProgramError as caught:
            outcome = [type(caught).__name__, str(caught), caught is raised, caught.__context__ is None]
        else:
            outcome = ["no exception"]
    return {"outcome": outcome, "histories": _histories(alice, bob), "out": _plain(stream.out)}


def default_stream_as_ag2_tests_it() -> Observation:
    """AG2's test/io/test_base.py, as a program: the default stream's type, in this thread and a new one."""
    from threading import Thread

    from autogen.io import IOConsole

    class MyIOStream(ProgramStream):
        pass

    mine = MyIOStream()
    seen = [isinstance(IOStream.get_default(), IOConsole)]
    with IOStream.set_default(mine):  # type: ignore[arg-type]
        got = IOStream.get_default()
        seen += [isinstance(got, MyIOStream), got is mine, got == mine]
        with IOStream.set_default(IOConsole()):
            seen.append(isinstance(IOStream.get_default(), IOConsole))
        IOStream.get_default().flag = True  # type: ignore[union-attr]
        seen += [IOStream.get_default() is mine, mine.__dict__.get("flag")]
    other: list[bool] = []
    thread = Thread(target=lambda: other.append(isinstance(IOStream.get_default(), IOConsole)))
    thread.start()
    thread.join()
    return {"seen": seen, "other_thread": other}


SCENARIOS: dict[str, Callable[[], Observation]] = {
    f.__name__: f
    for f in (
        two_agent_with_tools,
        async_two_agent,
        nested_chat,
        group_chat_round_robin,
        group_api_pattern,
        exception_from_a_reply,
        default_stream_as_ag2_tests_it,
    )
}


def _observe(scenario: Callable[[], Observation]) -> Observation:
    _scripted._call_ids = itertools.count(1)  # the scripted client's tool-call ids are process-wide: restart them
    return scenario()


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    mast_otel.uninstrument()
    reset_recording_failures()
    yield tp, exporter
    mast_otel.uninstrument()
    reset_recording_failures()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_instrumented_run_is_observably_identical(
    name: str, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tp, exporter = provider
    plain = _observe(SCENARIOS[name])
    mast_otel.instrument(tracer_provider=tp)
    instrumented = _observe(SCENARIOS[name])
    assert instrumented == plain
    if name != default_stream_as_ag2_tests_it.__name__:
        assert exporter.get_finished_spans(), "the instrumented run recorded nothing: the comparison proves nothing"
    assert mast_otel.recording_failures() == {}


@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - {default_stream_as_ag2_tests_it.__name__}))
def test_every_recorder_entry_point_raising_changes_nothing(
    name: str, provider: tuple[TracerProvider, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    tp, _ = provider
    plain = _observe(SCENARIOS[name])
    mast_otel.instrument(tracer_provider=tp)
    break_recorder(monkeypatch)
    broken = _observe(SCENARIOS[name])
    assert broken == plain
    failures = mast_otel.recording_failures()
    assert failures, "the injected failures were not counted"
    assert all(kind.startswith("ag2.") for kind in failures), failures
