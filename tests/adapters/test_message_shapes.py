"""Every message shape the conventions and the major instrumentations write is read as one: the same message
rendered in each shape gives the same text, the same tool calls (name, id, arguments) and the same author."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
from hypothesis import given
from hypothesis import strategies as st

from mast_otel.adapters._messages import genai_messages, message_text

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda t: t.strip() and t.strip() not in {"__REDACTED__", "[REDACTED]", "<REDACTED>", "REDACTED", "N/A"}
)
_NAME = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)
_CALL = st.tuples(_NAME, st.from_regex(r"call_[0-9]{1,3}", fullmatch=True),
                  st.dictionaries(_NAME, st.integers(), max_size=2))  # fmt: skip

Call = tuple[str, str, dict[str, Any]]


def _genai(texts: list[str], calls: list[Call], name: str) -> Any:
    parts = [{"type": "text", "content": t} for t in texts]
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for n, i, a in calls]
    return [{"role": "assistant", "parts": parts, "name": name}]


def _openai(texts: list[str], calls: list[Call], name: str) -> Any:
    return [{"role": "assistant", "name": name, "content": [{"type": "text", "text": t} for t in texts],
             "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                            for n, i, a in calls]}]  # fmt: skip


def _ai_sdk(texts: list[str], calls: list[Call], name: str) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    content += [{"type": "tool-call", "toolCallId": i, "toolName": n, "input": a} for n, i, a in calls]
    return [{"role": "assistant", "name": name, "content": content}]


def _anthropic(texts: list[str], calls: list[Call], name: str) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for n, i, a in calls]
    return {"role": "assistant", "name": name, "content": content}  # one message, not a list


def _bedrock(texts: list[str], calls: list[Call], name: str) -> Any:
    content: list[dict[str, Any]] = [{"text": t} for t in texts]
    content += [{"toolUse": {"toolUseId": i, "name": n, "input": a}} for n, i, a in calls]
    return [{"role": "assistant", "name": name, "content": content}]


def _flat_tool_use(texts: list[str], calls: list[Call], name: str) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    content += [{"type": "toolUse", "toolUseId": i, "name": n, "input": a} for n, i, a in calls]
    return [{"role": "assistant", "name": name, "content": content}]


def _gemini(texts: list[str], calls: list[Call], name: str) -> Any:
    parts: list[dict[str, Any]] = [{"text": t} for t in texts]
    parts += [{"function_call": {"id": i, "name": n, "args": a}} for n, i, a in calls]
    return [{"role": "assistant", "name": name, "parts": parts}]


def _langchain(texts: list[str], calls: list[Call], name: str) -> Any:
    content = [{"type": "text", "text": t} for t in texts]
    tool_calls = [{"id": i, "name": n, "arguments": a} for n, i, a in calls]
    return [{"type": "ai", "data": {"content": content, "name": name, "tool_calls": tool_calls}}]


SHAPES: dict[str, Callable[[list[str], list[Call], str], Any]] = {
    "genai": _genai, "openai": _openai, "ai-sdk": _ai_sdk, "anthropic": _anthropic, "bedrock": _bedrock,
    "flat-toolUse": _flat_tool_use, "gemini": _gemini, "langchain": _langchain,
}  # fmt: skip


@given(st.lists(_TEXT, max_size=3), st.lists(_CALL, max_size=3), _NAME, st.booleans())
def test_one_message_in_every_shape_reads_the_same(texts: list[str], calls: list[Call], name: str,
                                                   encoded: bool) -> None:  # fmt: skip
    read = set()
    for shape, render in SHAPES.items():
        value = render(texts, calls, name)
        messages = genai_messages(json.dumps(value) if encoded else value)
        content, parts = message_text(messages)
        found = (content, tuple((p["name"], p["id"], json.dumps(p["arguments"], sort_keys=True)) for p in parts),
                 tuple(m.get("name") for m in messages), tuple(m["role"] for m in messages))  # fmt: skip
        read.add(found)
        assert content == "\n".join(texts), shape
        assert [m.get("name") for m in messages] == [name], shape
        assert [(p["name"], p["id"], p["arguments"]) for p in parts] == list(calls), shape
    assert len(read) == 1


# One tool result (call id, what the tool returned) in each shape a result is written in.
RESULTS: dict[str, Callable[[str, str], Any]] = {
    "genai": lambda i, r: [{"role": "tool", "parts": [{"type": "tool_call_response", "id": i, "response": r}]}],
    "openai": lambda i, r: [{"role": "tool", "tool_call_id": i, "content": r}],
    "ai-sdk": lambda i, r: [{"role": "tool", "content": [{"type": "tool-result", "toolCallId": i, "output": r}]}],
    "ai-sdk-4": lambda i, r: [{"role": "tool", "content": [{"type": "tool-result", "toolCallId": i, "result": r}]}],
    "anthropic": lambda i, r: [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}]}],
    "bedrock": lambda i, r: [{"role": "user", "content": [{"toolResult": {"toolUseId": i, "content": r}}]}],
}  # fmt: skip


@given(st.from_regex(r"call_[0-9]{1,3}", fullmatch=True), _TEXT)
def test_one_tool_result_in_every_shape_reads_the_same(call_id: str, returned: str) -> None:
    for shape, render in RESULTS.items():
        (message,) = genai_messages(render(call_id, returned))
        assert [(p["type"], p["id"], p["response"]) for p in message["parts"]] == [
            ("tool_call_response", call_id, returned)], shape  # fmt: skip


@given(_CALL)
def test_a_gemini_call_in_either_spelling_is_a_call(call: Call) -> None:
    name, call_id, arguments = call
    for key in ("function_call", "functionCall"):
        part = {key: {"id": call_id, "name": name, "args": arguments}}
        (message,) = genai_messages([{"role": "model", "parts": [part]}])
        assert message["parts"] == [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}]
    flat = [{"role": "assistant", "content": [{"type": "function_call", "id": call_id, "name": name,
                                               "arguments": arguments}]}]  # fmt: skip
    assert message_text(genai_messages(flat))[1] == [{"type": "tool_call", "id": call_id, "name": name,
                                                      "arguments": arguments}]  # fmt: skip


def test_langchain_types_are_roles_and_only_a_typed_message_is_langchain_s() -> None:
    for kind, role in (("human", "user"), ("ai", "assistant"), ("system", "system"), ("tool", "tool")):
        (message,) = genai_messages([{"type": kind, "data": {"content": "x"}}])
        assert message["role"] == role
    (other,) = genai_messages([{"role": "user", "data": {"content": "x"}, "content": "said"}])
    assert other["role"] == "user" and message_text([other])[0] == "said"


def _not_a_json_container(value: str) -> bool:
    try:
        return json.loads(value) is not None and not isinstance(json.loads(value), (list, dict))
    except ValueError:
        return True


@given(_TEXT.filter(_not_a_json_container))
def test_plain_text_is_one_message_of_the_role_given_and_a_placeholder_is_none(said: str) -> None:
    (message,) = genai_messages(said, "user")
    assert message["role"] == "user" and message_text([message])[0] == said
    assert genai_messages("[REDACTED]") == [] and genai_messages("__REDACTED__") == []
    assert genai_messages(None) == [] and genai_messages("{}") == []
