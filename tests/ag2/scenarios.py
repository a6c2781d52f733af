"""Real AG2 Classic conversations with a scripted model client: shared by the tests, examples and benchmarks.

The scripted client itself lives in ``examples/_scripted.py`` (one implementation for examples and tests); this
module re-exports it under the names the tests use and adds the group builders.
"""

from __future__ import annotations

from typing import Any

from autogen import ConversableAgent, GroupChat, GroupChatManager

from examples._scripted import ScriptedAgent, ScriptedClient, is_terminate, scripted_agent

__all__ = ["ScriptedAgent", "ScriptedClient", "is_terminate", "round_robin_group", "scripted_agent"]


def round_robin_group(
    replies: dict[str, list[str]], *, max_round: int = 6, method: Any = "round_robin"
) -> tuple[ConversableAgent, GroupChatManager, GroupChat]:
    """A user proxy plus scripted members in a GroupChat; returns (user, manager, groupchat)."""
    user = ConversableAgent("user", llm_config=False, human_input_mode="NEVER", default_auto_reply="")
    members = [scripted_agent(n, r, is_termination_msg=is_terminate) for n, r in replies.items()]
    groupchat = GroupChat(agents=[user, *members], messages=[], max_round=max_round, speaker_selection_method=method)
    manager = GroupChatManager(groupchat, llm_config=False, is_termination_msg=is_terminate)
    return user, manager, groupchat
