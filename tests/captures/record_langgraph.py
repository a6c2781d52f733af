"""Record LangGraph captures (langgraph-supervisor), traced by ``openinference-instrumentation-langchain``.

``nox -s "captures(framework='langgraph')"`` (or ``python -m tests.captures.record_langgraph [RUN ...]`` in that
environment) writes ``tests/data/captures/langgraph/<run>.json``. The expectation is read from the graph's own
record of the run, its final state's ``messages`` (full history): the user's ``HumanMessage``; each ``AIMessage``
by its ``name`` (the agent), a model's answer when its ``response_metadata`` has a ``finish_reason``
(langgraph-supervisor writes the "Transferring back" pair itself); each ``ToolMessage`` answering the call of the
``AIMessage`` that holds its ``tool_call_id``: a ``transfer_to_<agent>`` / ``transfer_back_to_<agent>`` result is
a handoff from that message's agent, any other a tool call of it.

- ``supervisor``: the supervisor transfers to the researcher (who calls ``lookup_order``, answers and is
  transferred back), then to the writer (who answers and is transferred back), then answers.
- ``solo``: one ReAct agent with one tool: the control run, not a multi-agent conversation.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tests.captures._record import CLERK, NO_RULE, RESEARCHER, WRITER, Expectation, main, otlp_json, recording, write

FRAMEWORK = "langgraph"
PACKAGES = ["langgraph", "langgraph-supervisor", "langchain-core", "langchain-openai",
            "openinference-instrumentation-langchain"]  # fmt: skip
TASK = "I was charged twice for order A17. Please refund the duplicate charge."

SCRIPT = {
    "rules": [
        {"match": "ROLE_SUPERVISOR", "replies": [
            {"tool": "transfer_to_researcher", "args": {}},
            {"tool": "transfer_to_writer", "args": {}},
            "The duplicate 49.00 EUR charge on A17 is refunded; the customer has been told.",
        ]},
        RESEARCHER,
        WRITER,
        CLERK,
    ],
    "default": NO_RULE,
}  # fmt: skip
_TRANSFER = ("transfer_to_", "transfer_back_to_")


def _tool() -> Any:
    from langchain_core.tools import tool

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order's charges."""
        return f"Order {order_id}: charged 49.00 EUR twice on 2026-11-02."

    return lookup_order


def _model(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o", base_url=base_url, api_key="unused", max_retries=0)


def _instrumented(provider: Any) -> Any:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


def _expectation(messages: list[Any], multi: bool, default_agent: str) -> Expectation:
    caller: dict[str, str] = {}  # tool_call_id -> the agent whose AIMessage made the call
    agents: list[str] = []
    handoffs: list[tuple[str, str]] = []
    tools: list[tuple[str, str]] = []
    answers = 0
    task = ""
    for m in messages:
        if m.type == "human":
            task = task or str(m.content)
        elif m.type == "ai":
            name = str(m.name or default_agent)
            caller.update({c["id"]: name for c in m.tool_calls})
            if "finish_reason" in m.response_metadata:  # a model wrote it
                answers += 1
                if name not in agents:
                    agents.append(name)
        elif m.type == "tool":
            tool = str(m.name)
            source = caller[str(m.tool_call_id)]
            if tool.startswith(_TRANSFER):
                handoffs.append((source, tool.split("_to_", 1)[1]))
            else:
                tools.append((source, tool))
    return Expectation(
        conversation=multi, task=task, agents=agents, handoffs=handoffs, tool_calls=tools, messages=1 + answers,
        source="graph.invoke(...)['messages'] (full history): HumanMessage; AIMessage.name, a model's answer when "
        "response_metadata has a finish_reason, tool_calls ids; ToolMessage name / tool_call_id (transfer_to_<x>, "
        "transfer_back_to_<x>: a handoff)",
    )  # fmt: skip


def supervisor() -> Path:
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        model = _model(rec.server.base_url)
        researcher = create_react_agent(model, tools=[_tool()], name="researcher",
                                        prompt="ROLE_RESEARCHER. Look the order up.")  # fmt: skip
        writer = create_react_agent(model, tools=[], name="writer", prompt="ROLE_WRITER. Write the note.")
        graph = create_supervisor([researcher, writer], model=model, prompt="ROLE_SUPERVISOR. Coordinate.",
                                  output_mode="full_history").compile()  # fmt: skip
        out = graph.invoke({"messages": [{"role": "user", "content": TASK}]})
        instrumentor.uninstrument()
    expect = _expectation(out["messages"], multi=True, default_agent="supervisor")
    settings = {"supervisor": "create_supervisor(output_mode='full_history')", "agents": 3}
    return write(FRAMEWORK, "supervisor", PACKAGES, settings, expect, otlp_json(rec.exporter))


def solo() -> Path:
    from langgraph.prebuilt import create_react_agent

    with recording(SCRIPT) as rec:
        instrumentor = _instrumented(rec.provider)
        clerk = create_react_agent(_model(rec.server.base_url), tools=[_tool()], name="clerk",
                                   prompt="ROLE_CLERK. Answer.")  # fmt: skip
        out = clerk.invoke({"messages": [{"role": "user", "content": TASK}]})
        instrumentor.uninstrument()
    expect = _expectation(out["messages"], multi=False, default_agent="clerk")
    return write(FRAMEWORK, "solo", PACKAGES, {"agents": 1}, expect, otlp_json(rec.exporter))


RUNS = {"supervisor": supervisor, "solo": solo}

if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    sys.exit(main(RUNS, sys.argv[1:]))
