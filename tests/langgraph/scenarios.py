"""LangGraph graphs the tests run for real, against the project's scripted OpenAI-compatible server.

The supervisor is the example's (examples/langgraph_supervisor.py). The rest: a swarm (``langchain.agents
.create_agent`` members with ``langgraph_swarm`` handoff tools), a supervisor that never stops (recursion limit),
and generic graphs of plain function nodes marked as agents in their metadata (conditional edges, ``Command``,
``interrupt``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from examples import langgraph_supervisor as supervisor_example
from mast_otel.integrations.langgraph import AGENT_METADATA_KEY

TASK = "Where is my refund?"
SWARM_SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_ALICE", "replies": [{"tool": "transfer_to_bob", "args": {}}]},
        {
            "match": "ROLE_BOB",
            "replies": [{"tool": "lookup", "args": {"order": "A-17"}}, "Bob: refund sent on Monday."],
        },
    ],
}
LOOP_SCRIPT: dict[str, Any] = {  # the supervisor sends the researcher off again and again
    "rules": [
        {"match": "ROLE_SUPERVISOR", "replies": [{"tool": "transfer_to_researcher", "args": {}}]},
        {"match": "ROLE_RESEARCHER", "replies": ["Still looking."]},
    ],
}


def chat_model(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="scripted", base_url=base_url, api_key="unused", temperature=0)  # type: ignore[arg-type]


def supervisor(base_url: str) -> Any:
    return supervisor_example.build(base_url)


def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: refund issued"


def swarm(base_url: str) -> Any:
    from langchain.agents import create_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    to_bob = create_handoff_tool(agent_name="bob", description="Transfer to bob, who handles refunds")
    alice = create_agent(chat_model(base_url), [to_bob], system_prompt="ROLE_ALICE: triage.", name="alice")
    bob = create_agent(chat_model(base_url), [lookup], system_prompt="ROLE_BOB: refunds.", name="bob")
    return create_swarm([alice, bob], default_active_agent="alice").compile(checkpointer=InMemorySaver())


def endless_supervisor(base_url: str) -> Any:
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    researcher = create_react_agent(chat_model(base_url), [], prompt="ROLE_RESEARCHER", name="researcher")
    return create_supervisor([researcher], model=chat_model(base_url), prompt="ROLE_SUPERVISOR").compile()


# -- generic graphs: plain function nodes --------------------------------------------------------------------
def _planner(state: MessagesState) -> dict[str, Any]:
    drafts = sum(1 for m in state["messages"] if getattr(m, "name", None) == "coder")
    text = "Ship it." if drafts >= 2 else "Write the parser."
    return {"messages": [AIMessage(text)]}  # no name: the sender is the node's agent


def _route(state: MessagesState) -> str:
    return END if state["messages"][-1].content == "Ship it." else "coder"


def _coder(state: MessagesState) -> Command[Any]:
    draft = AIMessage("def parse(s): return s.split()", name="coder")
    return Command(goto="linter", update={"messages": [draft]})


def _linter(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage("lint: ok", name="linter")]}


def routed_team() -> Any:
    """planner --route--> coder --Command--> linter (not an agent) --edge--> planner ... until the planner ships.

    ``planner`` is marked with ``True`` (agent named after the node), ``coder`` with its agent's name.
    """
    builder = StateGraph(MessagesState)
    builder.add_node("planner", _planner, metadata={AGENT_METADATA_KEY: True})
    builder.add_node("coder", _coder, metadata={AGENT_METADATA_KEY: "coder"}, destinations=("linter",))
    builder.add_node("linter", _linter)
    builder.add_edge(START, "planner")
    builder.add_conditional_edges("planner", _route, ["coder", END])
    builder.add_edge("linter", "planner")
    return builder.compile(name="routed_team")


def _reviewer(state: MessagesState) -> dict[str, Any]:
    answer = interrupt({"question": "Approve the plan?"})
    return {"messages": [AIMessage(f"approved: {answer}", name="reviewer")]}


def approval_graph() -> Any:
    """planner -> reviewer, which waits for a person (``interrupt``); resumed with ``Command(resume=...)``."""
    builder = StateGraph(MessagesState)
    builder.add_node("planner", _planner, metadata={AGENT_METADATA_KEY: True})
    builder.add_node("reviewer", _reviewer, metadata={AGENT_METADATA_KEY: True})
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "reviewer")
    builder.add_edge("reviewer", END)
    return builder.compile(name="approval", checkpointer=InMemorySaver())


def _draft(state: MessagesState) -> Command[Any]:
    return Command(goto="reviewer", update={"messages": [AIMessage("draft v1", name="writer")]})


def _review(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage("looks fine", name="reviewer")]}


def command_team() -> Any:
    """writer --Command(goto="reviewer")--> reviewer -> END: a node's own ``Command`` between two agents."""
    builder = StateGraph(MessagesState)
    builder.add_node("writer", _draft, metadata={AGENT_METADATA_KEY: True}, destinations=("reviewer",))
    builder.add_node("reviewer", _review, metadata={AGENT_METADATA_KEY: True})
    builder.add_edge(START, "writer")
    builder.add_edge("reviewer", END)
    return builder.compile(name="command_team", checkpointer=InMemorySaver())
