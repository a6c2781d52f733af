"""A scripted AG2 model client and the LLM-config switch the examples share (the tests import it too).

``ScriptedClient`` implements AG2's ModelClient protocol (``create``, ``message_retrieval``, ``cost``,
``get_usage``) by answering from a fixed list of replies, cycled, so a conversation runs offline and the same
way every time. A reply is a string (the message text) or a dict with ``content`` and/or ``tool_calls``
(``[{"name": "transfer_to_coder_1", "arguments": {...}}]``), which lets a script drive AG2's tool-based
handoffs (``OnCondition``) and tools without a model.

``llm_config(name, replies, base_url=...)`` returns the scripted config when ``base_url`` is None and an
OpenAI-compatible one otherwise; ``make_agent`` builds the agent for either. That is the whole switch between
an offline run and a real server in the examples.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from autogen import ConversableAgent

__all__ = [
    "BASE_URL_ENV",
    "ScriptedAgent",
    "ScriptedClient",
    "is_terminate",
    "llm_config",
    "make_agent",
    "scripted_agent",
    "scripted_llm_config",
]

# Env var the examples read when --base-url is not given.
try:
    from examples._cli import BASE_URL_ENV
except ImportError:  # run as a script (python examples/x.py): examples/ itself is on sys.path
    from _cli import BASE_URL_ENV  # type: ignore[no-redef]
_SCRIPTED = "ScriptedClient"

Reply = str | dict[str, Any]


class _HidePlaceholderNotice(logging.Filter):
    """AG2 logs, for every client it builds from a config naming a custom client, that the client must still be
    registered; ScriptedAgent registers it at once, so for the scripted client that notice is only noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _SCRIPTED not in record.getMessage() or "register_model_client" not in record.getMessage()


logging.getLogger("autogen.oai.client").addFilter(_HidePlaceholderNotice())


class ScriptedClient:
    """AG2's ModelClient protocol, answering from a fixed list of replies (cycled).

    ``script`` (an iterator of replies) overrides the config's ``replies``; ``ScriptedAgent`` passes one so the
    position in the script survives AG2 rebuilding the agent's client.
    """

    def __init__(self, config: dict[str, Any], script: Iterator[Reply] | None = None, **_: Any) -> None:
        self.model = config["model"]
        self._replies = script if script is not None else itertools.cycle(config.get("replies") or ["ok"])

    def create(self, params: dict[str, Any]) -> Any:
        reply = next(self._replies)
        if isinstance(reply, dict):
            calls = [_tool_call(c) for c in reply.get("tool_calls", ())]
            message = _Message(content=reply.get("content"), tool_calls=calls or None)
        else:
            message = _Message(content=reply)
        return SimpleNamespace(
            choices=[SimpleNamespace(message=message, finish_reason="stop")],
            model=self.model,
            cost=0.0,
            usage=SimpleNamespace(prompt_tokens=1, completion_tokens=1, total_tokens=2),
        )

    def message_retrieval(self, response: Any) -> list[Any]:
        # A tool-calling reply goes back whole, as an OpenAI client's message object would; AG2 model_dump()s it.
        return [c.message if c.message.tool_calls else c.message.content for c in response.choices]

    def cost(self, response: Any) -> float:
        return 0.0

    @staticmethod
    def get_usage(response: Any) -> dict[str, Any]:
        return {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": 0.0, "model": response.model}


class _Message(SimpleNamespace):
    """The slice of an OpenAI chat message AG2 reads: content, tool calls, and ``model_dump``."""

    def __init__(self, content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> None:
        super().__init__(role="assistant", content=content, tool_calls=tool_calls, function_call=None)

    def model_dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [dict(c, function=dict(c["function"])) for c in self.tool_calls]
        return out


_call_ids = itertools.count(1)


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments", {})
    return {
        "id": call.get("id") or f"call_{next(_call_ids)}",
        "type": "function",
        "function": {
            "name": call["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


class ScriptedAgent(ConversableAgent):  # type: ignore[misc]
    """A ConversableAgent answering from a script.

    AG2 replaces ``agent.client`` whenever the agent's tools change (the group API does so before every turn to
    refresh its handoff tools), which would drop a registered custom client and restart its script; this agent
    re-registers the scripted client on every replacement, sharing one script cursor.
    """

    def __init__(self, name: str, replies: list[Reply], **kwargs: Any) -> None:
        self._script: Iterator[Reply] = itertools.cycle(replies or ["ok"])
        kwargs.setdefault("human_input_mode", "NEVER")
        super().__init__(name, llm_config=scripted_llm_config(name, replies), **kwargs)

    @property
    def client(self) -> Any:
        return self.__dict__.get("_scripted_client")

    @client.setter
    def client(self, value: Any) -> None:
        self.__dict__["_scripted_client"] = value
        if value is not None:
            value.register_model_client(model_client_cls=ScriptedClient, script=self._script)


def scripted_llm_config(name: str, replies: list[Reply]) -> dict[str, Any]:
    return {"config_list": [{"model": name, "model_client_cls": _SCRIPTED, "replies": replies}]}


def llm_config(
    name: str,
    replies: list[Reply],
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    max_tokens: int = 128,
) -> dict[str, Any]:
    """The scripted config when ``base_url`` is None, else one for the OpenAI-compatible server at ``base_url``."""
    if base_url is None:
        return scripted_llm_config(name, replies)
    entry = {
        "api_type": "openai",
        "model": model or "gpt-4o-mini",
        "base_url": base_url,
        "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
        "price": [0, 0],  # a local model has no price: keep AG2 from warning about cost
    }
    return {"config_list": [entry], "cache_seed": None, "temperature": 0.7, "max_tokens": max_tokens}


def make_agent(name: str, config: dict[str, Any], **kwargs: Any) -> ConversableAgent:
    """An agent on ``config``: a :class:`ScriptedAgent` for a scripted config, else a plain ConversableAgent."""
    kwargs.setdefault("human_input_mode", "NEVER")
    entries = config.get("config_list", ())
    if entries and entries[0].get("model_client_cls") == _SCRIPTED:
        return ScriptedAgent(name, list(entries[0].get("replies") or []), **kwargs)
    return ConversableAgent(name, llm_config=config, **kwargs)


def scripted_agent(name: str, replies: list[Reply], **kwargs: Any) -> ConversableAgent:
    """An agent that answers from ``replies`` (cycled), offline."""
    return ScriptedAgent(name, replies, **kwargs)


def is_terminate(msg: dict[str, Any]) -> bool:
    return "TERMINATE" in str(msg.get("content") or "")
