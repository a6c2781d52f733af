"""A program that seeds ``random`` and fixes ``uuid.uuid4``'s sequence, run with and without mast-otel.

LangGraph's own suite pins message ids by patching ``uuid.uuid4`` with a fixed sequence; many programs seed
``random`` for reproducible runs. mast-otel must draw from neither (``mast_otel._ids``), so a run's own record,
and what the program draws next, are the same with mast-otel on as off. :func:`observe` runs one scenario that way
and returns what the program saw; a scenario is a real framework run, offline, whose record itself depends on the
program's randomness where the framework allows (AG2's random speaker selection, LangGraph's message ids).

``SCENARIOS`` maps an integration's name to (modules it needs, the run, the instrumentor to switch on); tests
parametrize over :func:`available` ones. ``python -m tests.program_randomness NAME`` runs one scenario plain, then
after a bare ``mast_otel.instrument()`` (mast-otel's own provider), in a fresh process, and prints both
observations as JSON: a process sets its global provider once, so that path needs a process of its own.
``python -m tests.program_randomness NAME grpc`` (or ``http/protobuf``) does the same with the streams fixed before
``instrument()`` and the spans exported to an endpoint that answers "unavailable", so exports fail and are retried
while the program runs (:func:`main_export_fails`).
"""

from __future__ import annotations

import json
import os
import random
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any
from unittest import mock

from tests.frameworks import installed

SEED = 20261126
TASK = "Where is my refund?"


def fixed_uuid4s() -> Iterator[uuid.UUID]:
    """The sequence LangGraph's ``deterministic_uuids`` fixture gives ``uuid.uuid4``."""
    return (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))


def observe(
    run: Callable[[Any], Any],
    recorder: Any = None,
    *,
    before: Callable[[], Any] | None = None,
    settle: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Seed ``random``, fix ``uuid.uuid4``, run ``run(recorder)``; return its own record and the program's next
    draws. ``recorder`` (a ``Recorder``) is used only by the recorder scenario: None is that program without
    mast-otel. ``before()``, called once the streams are fixed, returns the recorder instead (it may call
    ``instrument()``: what that draws shows); ``settle()`` runs between the run and the next draws."""
    random.seed(SEED)
    with mock.patch("uuid.uuid4", side_effect=fixed_uuid4s()):
        if before is not None:
            recorder = before()
        record = run(recorder)
        if settle is not None:
            settle()
        return {
            "record": record,
            "next_random": [random.random() for _ in range(3)],
            "next_uuid4": [str(uuid.uuid4()) for _ in range(3)],
        }


def observe_warm(run: Callable[[Any], Any]) -> dict[str, Any]:
    """:func:`observe` without mast-otel, after a first run: a framework's first run imports modules lazily, and an
    import may draw (AG2's first group chat takes 14 more ``uuid4()`` than the next), which is not the run's."""
    observe(run)
    return observe(run)


# -- scenarios: each returns the framework's own record of the run -------------------------------------------
def recorder_run(rec: Any) -> Any:
    """A home-grown MAS on the public Recorder API (every kind of span; the conversation id left to mast-otel);
    ``rec`` None runs the same program with no mast-otel call."""
    from opentelemetry import trace

    names = ["planner", "coder", "reviewer"]
    said = []
    # The program's own spans on the global provider, as a framework's built-in tracing makes (autogen-core,
    # AG2 1.x): without mast-otel no provider is set and they draw nothing; mast-otel's provider must keep it so.
    own = trace.get_tracer("the-program")
    with rec.conversation("team", task=TASK) if rec else nullcontext():
        for step in range(4):
            speaker = random.choice(names)  # the program's own seeded choice
            own.start_span(f"step {step}").end()
            with rec.agent_turn(speaker) if rec else nullcontext():
                said.append(f"{speaker}: {uuid.uuid4()}")
                if rec:
                    rec.message(speaker, ["*"], said[-1])
            with rec.tool_call("lookup", arguments={"step": step}) if rec else nullcontext() as call:
                if call is not None:
                    call.set_result("ok")
            target = random.choice(names)
            if rec:
                rec.handoff(speaker, target, reason="routing")
    return said


def ag2_run(_: Any) -> Any:
    """AG2 Classic: a group chat whose speakers are picked by ``random.choice`` (method "random")."""
    from tests.ag2.scenarios import round_robin_group

    replies = {name: [f"{name} says {i}" for i in range(6)] for name in ("alice", "bob", "carol")}
    user, manager, groupchat = round_robin_group(replies, max_round=7, method="random")
    user.initiate_chat(manager, message=TASK)
    return [(m.get("name"), m.get("content")) for m in groupchat.messages]


def langgraph_run(_: Any) -> Any:
    """LangGraph: a graph of function nodes marked as agents; ``add_messages`` ids each message with uuid4."""
    from langchain_core.messages import HumanMessage

    from tests.langgraph.scenarios import routed_team

    result = routed_team().invoke({"messages": [HumanMessage(TASK)]})
    return [(m.type, m.id, m.content) for m in result["messages"]]


def autogen_agentchat_run(_: Any) -> Any:
    """autogen-agentchat: a round-robin team on autogen's replay model; every message carries a uuid4 id."""
    import asyncio

    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.replay import ReplayChatCompletionClient

    def agent(name: str) -> AssistantAgent:
        return AssistantAgent(name, ReplayChatCompletionClient([f"{name} {i}" for i in range(4)]))

    team = RoundRobinGroupChat([agent("writer"), agent("critic")], termination_condition=MaxMessageTermination(5))
    result = asyncio.run(team.run(task=TASK))
    return [(m.source, m.id, m.to_text()) for m in result.messages]


def ag2_1x_run(_: Any) -> Any:
    """AG2 1.x: two scripted agents answering each other on a hub workflow; AG2's write-ahead log is the record."""
    import asyncio

    from tests.ag2_1x.oracle import wal_record
    from tests.ag2_1x.scenarios import open_hub, ping_pong

    async def run() -> Any:
        hub = await open_hub()
        channel_id = await ping_pong(hub, ("user", "alice", "bob"), max_turns=4)
        record = await wal_record(hub, channel_id)
        await hub.close()
        # AG2 1.x's ids carry a timestamp, so they differ from run to run with or without mast-otel: not compared.
        return [(m.sender, m.recipients, m.text) for m in record.messages], record.close_reason

    return asyncio.run(run())


def crewai_run(_: Any) -> Any:
    """CrewAI: a sequential crew (a tool call, research passed as context) against the scripted server."""
    from examples.scripted_openai import ScriptedOpenAI
    from tests.crewai import scenarios

    # CrewAI's anonymous telemetry works in threads of its own: with it on, two plain runs already draw
    # differently from random (and a test must not phone home; tests/crewai/conftest.py switches it off too).
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    with ScriptedOpenAI(scenarios.SEQUENTIAL_SCRIPT) as server:
        output = scenarios.sequential(server.base_url).kickoff()
    return [(task.agent, task.raw) for task in output.tasks_output]


def openai_agents_run(_: Any) -> Any:
    """The OpenAI Agents SDK: triage hands off to billing, which calls a tool, against the scripted server."""
    import asyncio

    from agents import set_trace_processors

    from examples.scripted_openai import ScriptedOpenAI
    from mast_otel.integrations.openai_agents import OpenAIAgentsInstrumentor
    from tests.openai_agents import scenarios

    # The SDK's own exporter would post to OpenAI: the program configures its processors without it, keeping
    # mast-otel's if an instrumentor registered it (once per process; uninstrument only disables it).
    registered = OpenAIAgentsInstrumentor().processor
    set_trace_processors([registered] if registered is not None else [])  # type: ignore[list-item]
    with ScriptedOpenAI(scenarios.triage_script()) as server:
        agent = scenarios.triage_agents(scenarios.model_for("chat_completions", server.base_url))
        result = asyncio.run(scenarios.run(agent, TASK))
    return [type(item).__name__ for item in result.new_items] + [str(result.final_output)]


def metagpt_run(_: Any) -> Any:
    """MetaGPT: the software team of its tier (Coder -> Tester -> Reviewer) on the scripted provider; every
    ``Message`` MetaGPT makes takes its id from ``uuid.uuid4()``, so the record (the team's history and each role's
    memory, ids included) depends on the program's uuid4 sequence. Two plain runs give the same record, and the run
    draws nothing from ``random`` (the next draws are the seed's first), so all of it is compared."""
    import asyncio

    from tests.metagpt.offline_config import configure_metagpt

    configure_metagpt()  # MetaGPT reads its config when imported: this runs outside the MetaGPT tier's conftest
    from tests.metagpt.scenarios import IDEA, scripted_context, scripted_provider, software_team

    with scripted_provider():
        team = software_team(scripted_context())
        asyncio.run(team.run(n_round=10, idea=IDEA))
    memories = {
        role.name: [(m.id, m.sent_from, m.cause_by, m.content) for m in role.rc.memory.get()]
        for role in team.env.roles.values()
    }
    return team.env.history, memories


@dataclass(frozen=True)
class Scenario:
    modules: tuple[str, ...]  # what must be importable for it to run here
    run: Callable[[Any], Any]
    instrumentor: str  # "module:Class" of the integration ("" for the recorder itself)


SCENARIOS: dict[str, Scenario] = {
    "recorder": Scenario((), recorder_run, ""),
    "ag2": Scenario(("autogen",), ag2_run, "mast_otel.integrations.ag2:AG2Instrumentor"),
    "langgraph": Scenario(
        ("langgraph", "langchain_core"), langgraph_run, "mast_otel.integrations.langgraph:LangGraphInstrumentor"
    ),
    "autogen_agentchat": Scenario(
        ("autogen_agentchat", "autogen_ext"),
        autogen_agentchat_run,
        "mast_otel.integrations.autogen_agentchat:AutogenAgentChatInstrumentor",
    ),
    "ag2_1x": Scenario(("ag2",), ag2_1x_run, "mast_otel.integrations.ag2_1x:AG2V1Instrumentor"),
    "crewai": Scenario(("crewai",), crewai_run, "mast_otel.integrations.crewai:CrewAIInstrumentor"),
    "openai_agents": Scenario(
        ("agents",), openai_agents_run, "mast_otel.integrations.openai_agents:OpenAIAgentsInstrumentor"
    ),
    "metagpt": Scenario(("metagpt",), metagpt_run, "mast_otel.integrations.metagpt:MetaGPTInstrumentor"),
}


def available() -> list[str]:
    """The scenarios whose framework is installed here (the recorder's always is)."""
    return [name for name, s in SCENARIOS.items() if installed(*s.modules)]


def instrumentor(name: str) -> Any:
    """A fresh instrumentor of scenario ``name``'s integration."""
    module, cls = SCENARIOS[name].instrumentor.split(":")
    return getattr(__import__(module, fromlist=[cls]), cls)()


class Unavailable:
    """An OTLP endpoint that is up and answers every export "try again later" (gRPC ``UNAVAILABLE``, HTTP 503,
    both retryable), counting the attempts: a collector that is restarting. Runs in this process."""

    def __init__(self) -> None:
        import threading
        from concurrent import futures
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        import grpc

        self.attempts = 0
        self._arrived = threading.Condition()
        unavailable = self

        def export(_request: bytes, context: Any) -> bytes:
            unavailable._count()
            context.abort(grpc.StatusCode.UNAVAILABLE, "the test collector is restarting")
            return b""

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},
        )
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[handler])
        self.grpc_port = self._grpc.add_insecure_port("127.0.0.1:0")
        self._grpc.start()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                unavailable._count()
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.http_port = self._http.server_address[1]
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def _count(self) -> None:
        with self._arrived:
            self.attempts += 1
            self._arrived.notify_all()

    def wait_for(self, attempts: int, timeout: float = 60.0) -> int:
        """Block until ``attempts`` exports were tried (the first and its retries); return how many were."""
        with self._arrived:
            self._arrived.wait_for(lambda: self.attempts >= attempts, timeout)
            return self.attempts


def main_export_fails(name: str, protocol: str) -> None:
    """Print ``{"plain": ..., "instrumented": ..., "spans": N, "attempts": M}`` for scenario ``name``: the program
    fixes its streams after ``import mast_otel`` and before ``instrument()``, and its spans are exported over
    ``protocol`` ("grpc" or "http/protobuf") to an endpoint that answers "unavailable", so the exporter retries
    while the program runs; the next draws are taken after the third attempt (two retries) reached it."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

    import mast_otel

    class Counting(SpanProcessor):
        ended = 0

        def on_end(self, span: ReadableSpan) -> None:
            Counting.ended += 1

    endpoint = Unavailable()
    os.environ["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = (
        f"http://127.0.0.1:{endpoint.grpc_port}"
        if protocol == "grpc"
        else f"http://127.0.0.1:{endpoint.http_port}/v1/traces"
    )
    os.environ["OTEL_BSP_SCHEDULE_DELAY"] = "50"  # export (and fail) while the program still runs
    os.environ["OTEL_EXPORTER_OTLP_TIMEOUT"] = "30"  # room for two back-offs (about 1 s, then 2 s)
    run = SCENARIOS[name].run
    plain = observe_warm(run)

    def instrument() -> Any:
        mast_otel.instrument()  # mast-otel's own provider: nothing set one before
        trace.get_tracer_provider().add_span_processor(Counting())  # type: ignore[attr-defined]
        return mast_otel.Recorder(framework="randomness")

    instrumented = observe(run, before=instrument, settle=lambda: endpoint.wait_for(3) and None)
    print(json.dumps({"plain": plain, "instrumented": instrumented, "spans": Counting.ended,
                      "attempts": endpoint.attempts}, default=str))  # fmt: skip
    sys.stdout.flush()
    os._exit(0)  # the exporter is still retrying: leave without waiting for it


def main(name: str) -> None:
    """Print ``{"plain": ..., "instrumented": ..., "spans": N}`` for scenario ``name``, the second run after a bare
    ``mast_otel.instrument()``; then leave without the exit-time export (there is no collector to export to)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

    import mast_otel

    class Counting(SpanProcessor):
        ended = 0

        def on_end(self, span: ReadableSpan) -> None:
            Counting.ended += 1

    run = SCENARIOS[name].run
    plain = observe_warm(run)
    mast_otel.instrument()  # mast-otel's own provider: nothing set one before
    trace.get_tracer_provider().add_span_processor(Counting())  # type: ignore[attr-defined]
    instrumented = observe(run, mast_otel.Recorder(framework="randomness"))
    print(json.dumps({"plain": plain, "instrumented": instrumented, "spans": Counting.ended}, default=str))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        main_export_fails(sys.argv[1], sys.argv[2])
    else:
        main(sys.argv[1])
