"""Real AG2 Classic conversations with a scripted model client: shared by the tests, examples and benchmarks."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

from autogen import ConversableAgent, GroupChat, GroupChatManager


class ScriptedClient:
    """AG2's ModelClient protocol, answering from a fixed list of replies (cycled)."""

    def __init__(self, config: dict[str, Any], **_: Any) -> None:
        self.model = config["model"]
        self._replies = itertools.cycle(config.get("replies") or ["ok"])

    def create(self, params: dict[str, Any]) -> Any:
        msg = SimpleNamespace(content=next(self._replies), tool_calls=None, function_call=None)
        return SimpleNamespace(
            choices=[SimpleNamespace(message=msg, finish_reason="stop")],
            model=self.model,
            cost=0.0,
            usage=SimpleNamespace(prompt_tokens=1, completion_tokens=1, total_tokens=2),
        )

    def message_retrieval(self, response: Any) -> list[str]:
        return [c.message.content for c in response.choices]

    def cost(self, response: Any) -> float:
        return 0.0

    @staticmethod
    def get_usage(response: Any) -> dict[str, Any]:
        return {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": 0.0, "model": response.model}


def scripted_agent(name: str, replies: list[str], **kwargs: Any) -> ConversableAgent:
    llm_config = {"config_list": [{"model": name, "model_client_cls": "ScriptedClient", "replies": replies}]}
    kwargs.setdefault("human_input_mode", "NEVER")
    agent = ConversableAgent(name, llm_config=llm_config, **kwargs)
    agent.register_model_client(model_client_cls=ScriptedClient)
    return agent


def is_terminate(msg: dict[str, Any]) -> bool:
    return "TERMINATE" in str(msg.get("content") or "")


def round_robin_group(
    replies: dict[str, list[str]], *, max_round: int = 6, method: Any = "round_robin"
) -> tuple[ConversableAgent, GroupChatManager, GroupChat]:
    """A user proxy plus scripted members in a GroupChat; returns (user, manager, groupchat)."""
    user = ConversableAgent("user", llm_config=False, human_input_mode="NEVER", default_auto_reply="")
    members = [scripted_agent(n, r, is_termination_msg=is_terminate) for n, r in replies.items()]
    groupchat = GroupChat(agents=[user, *members], messages=[], max_round=max_round, speaker_selection_method=method)
    manager = GroupChatManager(groupchat, llm_config=False, is_termination_msg=is_terminate)
    return user, manager, groupchat
