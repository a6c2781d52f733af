"""Real AG2 1.x hub runs with AG2's scripted model (``ag2.testing`` through ``examples._ag2_1x.ScriptedConfig``).

Each returns the hub (the caller closes it) and the channel ids, so a test can read AG2's record of the run.
The triage -> specialist handoff chain with a Finish is the example itself (``examples.ag2_1x_triage.run``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any

from ag2 import Agent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import (
    AUDIT_KIND_TURN_FAILED,
    CONSULTING_TYPE,
    CONVERSATION_TYPE,
    DISCUSSION_TYPE,
    WORKFLOW_TYPE,
    AgentTarget,
    FromSpeaker,
    Hub,
    TerminateTarget,
    Transition,
    TransitionGraph,
    default_handler,
)

from examples._ag2_1x import ScriptedConfig, call, wait_closed


async def open_hub(**kwargs: Any) -> Any:
    kwargs.setdefault("expectation_sweep_interval", 0)
    return await Hub.open(MemoryKnowledgeStore(), **kwargs)


async def register_silent(hub: Any, name: str) -> Any:
    """A participant that only writes the first message (a user); it never runs a turn."""
    client = await hub.register(Agent(name, config=ScriptedConfig()), attach_plugin=False)
    client.on_envelope(lambda envelope: asyncio.sleep(0))
    return client


async def wait_messages(hub: Any, channel_id: str, count: int, timeout: float = 30.0) -> None:
    """Until the channel's WAL holds ``count`` substantive envelopes, then a moment of quiet."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        wal = await hub.read_wal(channel_id)
        if sum(e.event_type in ("ag2.msg.text", "ag2.packet") for e in wal) >= count:
            break
        if loop.time() > deadline:
            raise TimeoutError(f"channel {channel_id}: fewer than {count} messages after {timeout}s")
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)


async def close_after(hub: Any, channel: Any, messages: int, reason: str) -> str:
    """Once the channel holds ``messages`` messages (and a moment of quiet), close it with ``reason``; its id."""
    await wait_messages(hub, channel.channel_id, messages)
    await channel.close(reason=reason)
    await wait_closed(hub, channel.channel_id)
    return str(channel.channel_id)


async def ping_pong(
    hub: Any, names: tuple[str, str, str], max_turns: int, replies: int = 10, middleware: Any = None
) -> str:
    """A workflow where ``names[1]`` and ``names[2]`` answer each other (graph transitions) until ``max_turns``.

    ``names[0]`` writes the task. ``middleware(name)``, if given, is each agent's middleware list (the benchmark
    puts AG2's own telemetry there). Returns the channel id once AG2 closed it.
    """
    user = await register_silent(hub, names[0])
    a, b = [
        await hub.register(
            Agent(
                n,
                f"You are {n}.",
                config=ScriptedConfig(*[f"{n} draft {i}" for i in range(replies)]),
                middleware=middleware(n) if middleware else (),
            )
        )
        for n in names[1:]
    ]
    graph = TransitionGraph(
        initial_speaker=user.agent_id,
        transitions=[
            Transition(when=FromSpeaker(user.agent_id), then=AgentTarget(a.agent_id)),
            Transition(when=FromSpeaker(a.agent_id), then=AgentTarget(b.agent_id)),
            Transition(when=FromSpeaker(b.agent_id), then=AgentTarget(a.agent_id)),
        ],
        max_turns=max_turns,
    )
    channel = await user.open(type=WORKFLOW_TYPE, target=list(names[1:]), knobs={"graph": graph.to_dict()})
    await channel.send(f"{names[1]} and {names[2]}: agree on a release note.")
    await wait_closed(hub, channel.channel_id)
    return str(channel.channel_id)


DISCUSSION_SCRIPTS = {
    "moderator": ("Thanks both. One last round, then we close.", ""),
    "alice": ("Cache the parsed config per process.", "Fine by me: cache per process."),
    "bob": ("Per request is safer while the config can change.", "Agreed, with a reload hook."),
}


async def discussion(hub: Any) -> str:
    """Three agents in a round-robin discussion; the moderator closes it once everyone had two turns."""
    clients = {
        n: await hub.register(Agent(n, f"You are {n}.", config=ScriptedConfig(*s)))
        for n, s in DISCUSSION_SCRIPTS.items()
    }
    channel = await clients["moderator"].open(type=DISCUSSION_TYPE, target=["alice", "bob"])
    await channel.send("Should we cache the parsed config per process or per request?")
    return await close_after(hub, channel, 6, "moderator closed the discussion")


async def delegation(hub: Any) -> str:
    """A conversation where the coordinator consults an expert through the ``delegate`` tool; returns its id."""
    user = await register_silent(hub, "user")
    coordinator = await hub.register(
        Agent(
            "coordinator",
            "You coordinate.",
            config=ScriptedConfig(
                call("delegate", target="expert", prompt="What is the p99 latency budget for checkout?"),
                "The expert says the p99 budget is 300 ms.",
            ),
        )
    )
    # In process, AG2 1.2.1 delivers an agent's envelopes inline, one at a time: a turn waiting in ``delegate`` for
    # the consulting reply would block that reply's delivery (until the tool's timeout). Running the
    # coordinator's turns as tasks (AG2's own ``default_handler``) lets the reply through.
    tasks: set[asyncio.Task[None]] = set()

    def handle(envelope: Any) -> Any:
        task = asyncio.create_task(default_handler(envelope, coordinator))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return asyncio.sleep(0)

    coordinator.on_envelope(handle)
    await hub.register(Agent("expert", "You know the SLOs.", config=ScriptedConfig("300 ms at p99.")))
    channel = await user.open(type=CONVERSATION_TYPE, target="coordinator")
    await channel.send("What latency budget do we have for checkout?")
    return await close_after(hub, channel, 2, "user got the answer")


async def failing_turn(hub: Any) -> str:
    """A conversation whose agent's model call raises; AG2 reports the failed turn and the user closes it."""
    user = await register_silent(hub, "user")
    await hub.register(Agent("flaky", config=ScriptedConfig(ConnectionError("model endpoint unreachable"))))
    channel = await user.open(type=CONVERSATION_TYPE, target="flaky")
    await channel.send("Summarise the incident.")
    await until_turn_failed(hub, channel.channel_id)
    return await close_after(hub, channel, 1, "gave up")


async def until_turn_failed(hub: Any, channel_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """AG2's audit record of a failed turn on the channel, once the hub has written it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        for record in await hub.audit_log.read_all():
            if record.get("kind") == AUDIT_KIND_TURN_FAILED and record.get("channel_id") == channel_id:
                return dict(record)
        if loop.time() > deadline:
            raise TimeoutError(f"no failed turn on {channel_id} after {timeout}s")
        await asyncio.sleep(0.01)


async def expiring(hub: Any) -> str:
    """A conversation nobody answers (an empty reply posts nothing), opened with a 1 s TTL; the TTL sweep expires it."""
    user = await register_silent(hub, "user")
    await hub.register(Agent("on_call", config=ScriptedConfig("")))  # acks the invite; its turn says nothing
    channel = await user.open(type=CONVERSATION_TYPE, target="on_call", ttl=1)
    await channel.send("Is anyone looking at the pager?")
    await asyncio.sleep(1.1)
    await hub.expire_due()
    await wait_closed(hub, channel.channel_id)
    return str(channel.channel_id)


async def sign_off(hub: Any) -> str:
    """A workflow the graph ends: writer -> reviewer, then ``TerminateTarget("approved")`` after the reviewer."""
    user = await register_silent(hub, "user")
    writer = await hub.register(Agent("writer", config=ScriptedConfig("Release note: faster config loading.")))
    reviewer = await hub.register(Agent("reviewer", config=ScriptedConfig("Ship it.")))
    graph = TransitionGraph(
        initial_speaker=user.agent_id,
        transitions=[
            Transition(when=FromSpeaker(user.agent_id), then=AgentTarget(writer.agent_id)),
            Transition(when=FromSpeaker(writer.agent_id), then=AgentTarget(reviewer.agent_id)),
            Transition(when=FromSpeaker(reviewer.agent_id), then=TerminateTarget(reason="approved")),
        ],
        max_turns=10,
    )
    channel = await user.open(type=WORKFLOW_TYPE, target=["writer", "reviewer"], knobs={"graph": graph.to_dict()})
    await channel.send("Write the release note.")
    await wait_closed(hub, channel.channel_id)
    return str(channel.channel_id)


class ManualClock:
    """The hub's clock (``Hub.open(clock=...)``, ISO 8601), moved by the test instead of waited for."""

    def __init__(self) -> None:
        self.now = datetime.now(timezone.utc)

    def __call__(self) -> str:
        return self.now.isoformat()

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


async def unanswered_consultation(hub: Any, clock: ManualClock) -> str:
    """A consulting channel whose respondent never replies; past its ``reply_within`` expectation (600 s on the
    hub's clock) AG2's expectation sweeper closes it (``auto_close``)."""
    user = await register_silent(hub, "user")
    await hub.register(Agent("expert", config=ScriptedConfig("")))  # acks the invite; its turn says nothing
    channel = await user.open(type=CONSULTING_TYPE, target="expert")
    await channel.send("Can you review the schema change?")
    await wait_messages(hub, channel.channel_id, 1)
    clock.advance(601)
    await wait_closed(hub, channel.channel_id)
    return str(channel.channel_id)


def lookup_order(order_id: str) -> str:
    """Look an order up (the order service is down)."""
    raise LookupError(f"order service unavailable for {order_id}")


async def failing_tool(hub: Any) -> str:
    """A conversation whose agent's tool raises; AG2 hands the error back to the model, which answers anyway."""
    user = await register_silent(hub, "user")
    config = ScriptedConfig(
        call("lookup_order", order_id="A-17"), "I could not reach the order service.", raise_tool_errors=False
    )
    await hub.register(Agent("support", config=config, tools=[lookup_order]))
    channel = await user.open(type=CONVERSATION_TYPE, target="support")
    await channel.send("Where is order A-17?")
    return await close_after(hub, channel, 2, "user left")
