"""Real autogen-agentchat teams of every type, with the scripted replies that drive them offline.

Each builder takes the scripted server's base URL; ``SCRIPT`` holds every rule (markers in the agents' system
prompts, the selector's and Magentic-One's own prompts), so one server answers any of these teams.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TerminationCondition
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from autogen_ext.models.openai import OpenAIChatCompletionClient

REPO = Path(__file__).resolve().parents[2]
TASK = "Write a haiku about autumn"
MODEL_INFO: dict[str, Any] = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
    "multiple_system_messages": True,
}


def ledger(
    *,
    satisfied: bool,
    speaker: str,
    instruction: str,
    reason: str,
    progress: bool = True,
    loop: bool = False,
    done_reason: str = "not yet",
) -> dict[str, Any]:
    """A Magentic-One progress ledger, as its orchestrator asks the model for one."""
    return {
        "is_request_satisfied": {"reason": done_reason, "answer": satisfied},
        "is_in_loop": {"reason": "loop check", "answer": loop},
        "is_progress_being_made": {"reason": "progress check", "answer": progress},
        "next_speaker": {"reason": reason, "answer": speaker},
        "instruction_or_question": {"reason": "next step", "answer": instruction},
    }


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj)


SCRIPT: dict[str, Any] = {
    "rules": [
        {"match": "ROLE_WRITER", "replies": ["Leaves drift slowly down", "Crimson leaves drift down, cold wind"]},
        {"match": "ROLE_CRITIC", "replies": ["Too short, add an image.", "APPROVE"]},
        {"match": "role play game", "replies": ["writer", "critic", "writer", "critic"]},
        {
            "match": "ROLE_ALICE",
            "replies": [{"tool": "lookup", "args": {"query": "refund"}}, {"tool": "transfer_to_bob", "args": {}}],
        },
        {"match": "ROLE_EDITOR", "replies": ["Crimson leaves drift down / cold wind hums / the year exhales"]},
        {"match": "ROLE_BOB", "replies": ["Refund issued for order 42. TERMINATE"]},
        {"match": "GIVEN OR VERIFIED FACTS", "replies": ["Facts: a haiku has 5-7-5 syllables."]},
        {"match": "To address this request we have assembled", "replies": ["Plan: writer drafts, critic checks."]},
        {
            "match": "Recall we are working on the following request",
            "replies": [
                _json(
                    ledger(
                        satisfied=False,
                        speaker="writer",
                        instruction="Draft the haiku.",
                        reason="The writer drafts text.",
                    )
                ),
                _json(
                    ledger(
                        satisfied=False,
                        speaker="critic",
                        instruction="Review the draft.",
                        reason="A draft exists; the critic must check it.",
                    )
                ),
                _json(
                    ledger(
                        satisfied=True,
                        speaker="critic",
                        instruction="-",
                        reason="-",
                        done_reason="The critic approved the haiku.",
                    )
                ),
            ],
        },
        {"match": "We have completed the task.", "replies": ["Here is your haiku: Crimson leaves drift down."]},
    ],
    "default": "OK",
}


def lookup(query: str) -> str:
    """Look up a policy."""
    return f"policy for {query}: refunds within 30 days"


def client(base_url: str) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(model="scripted", base_url=base_url, api_key="unused", model_info=MODEL_INFO)


def writer_critic(base_url: str) -> tuple[AssistantAgent, AssistantAgent]:
    writer = AssistantAgent(
        "writer", client(base_url), system_message="ROLE_WRITER. You write.", description="drafts text"
    )
    critic = AssistantAgent(
        "critic", client(base_url), system_message="ROLE_CRITIC. You review.", description="reviews text"
    )
    return writer, critic


def stop(max_messages: int = 8) -> TerminationCondition:
    return TextMentionTermination("APPROVE") | MaxMessageTermination(max_messages)


def round_robin(base_url: str, **kwargs: Any) -> RoundRobinGroupChat:
    return RoundRobinGroupChat(list(writer_critic(base_url)), termination_condition=stop(), **kwargs)


def selector(base_url: str, **kwargs: Any) -> SelectorGroupChat:
    return SelectorGroupChat(
        list(writer_critic(base_url)), model_client=client(base_url), termination_condition=stop(), **kwargs
    )


def swarm(base_url: str) -> Swarm:
    alice = AssistantAgent("alice", client(base_url), system_message="ROLE_ALICE", tools=[lookup], handoffs=["bob"])
    bob = AssistantAgent("bob", client(base_url), system_message="ROLE_BOB")
    return Swarm([alice, bob], termination_condition=TextMentionTermination("TERMINATE"))


def graph_flow(base_url: str) -> GraphFlow:
    """writer -> critic, then critic -> editor only when the critic asks for more ("Too short")."""
    writer, critic = writer_critic(base_url)
    editor = AssistantAgent(
        "editor", client(base_url), system_message="ROLE_EDITOR. You polish.", description="polishes text"
    )
    builder = DiGraphBuilder()
    builder.add_node(writer).add_node(critic).add_node(editor)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, editor, condition="Too short")
    return GraphFlow([writer, critic, editor], graph=builder.build(), termination_condition=stop())


def magentic_one(base_url: str, **kwargs: Any) -> MagenticOneGroupChat:
    return MagenticOneGroupChat(list(writer_critic(base_url)), model_client=client(base_url), **kwargs)
