"""The scripted OpenAI-compatible server, through the real ``openai`` client (the way frameworks call it)."""

from __future__ import annotations

import json

import openai

from examples.scripted_openai import ScriptedOpenAI

SCRIPT = {
    "rules": [
        {"match": "ROLE_TRIAGE", "replies": [{"tool": "transfer_to_billing", "args": {"reason": "refund"}}, "done"]},
        {"match": "ROLE_BILLING", "replies": ["refunded"]},
    ],
    "default": "fallback",
}


def test_chat_completions_tool_call_then_text_then_default() -> None:
    with ScriptedOpenAI(SCRIPT) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        first = client.chat.completions.create(
            model="m", messages=[{"role": "system", "content": "ROLE_TRIAGE"}, {"role": "user", "content": "hi"}]
        )
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert call.function.name == "transfer_to_billing"  # type: ignore[union-attr]
        assert json.loads(call.function.arguments) == {"reason": "refund"}  # type: ignore[union-attr]
        second = client.chat.completions.create(model="m", messages=[{"role": "system", "content": "ROLE_TRIAGE"}])
        third = client.chat.completions.create(model="m", messages=[{"role": "system", "content": "ROLE_TRIAGE"}])
        other = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "nothing"}])
        assert [second.choices[0].message.content, third.choices[0].message.content] == ["done", "done"]
        assert other.choices[0].message.content == "fallback"
        assert [r.rule for r in server.requests] == [0, 0, 0, None]


def test_streaming_chat_and_responses_api() -> None:
    with ScriptedOpenAI(SCRIPT) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "system", "content": "ROLE_BILLING"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "refunded"
        response = client.responses.create(model="m", instructions="ROLE_TRIAGE", input="refund please")
        assert response.output[0].type == "function_call"
        with client.responses.stream(model="m", instructions="ROLE_TRIAGE", input="again") as events:
            final = events.get_final_response()
        assert final.output_text == "done"
        server.reset()
        assert server.requests == []
