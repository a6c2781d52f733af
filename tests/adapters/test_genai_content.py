"""Message content as GenAI-convention frameworks record it, in the shapes the captures do not reach: the older
per-message events in their OpenAI-style and plain-text forms, placeholders a redacting exporter leaves, answers
in several parts, Google ADK's legacy request and response, and inputs that start with a system prompt or the
model's greeting. Each expected value is worked out by hand from the event or attribute given."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, adapt
from mast_otel.adapters._genai_content import first_user_text, output
from mast_otel.spans import SpanEvent, SpanRecord
from tests.adapters._fixtures import messages
from tests.adapters.test_genai import _Trace

CHOICE = "gen_ai.choice"
USER_MESSAGE = "gen_ai.user.message"


def _span(*events: SpanEvent, **attrs: Any) -> SpanRecord:
    return SpanRecord("0" * 32, "1" * 16, None, "chat", 1, 2, {k.replace("__", "."): v for k, v in attrs.items()},
                      events=events)  # fmt: skip


def _choice(message: Any) -> SpanEvent:
    return SpanEvent(CHOICE, {"message": message if isinstance(message, str) else json.dumps(message)})


# --- the older per-message events --------------------------------------------------------------------------------


def test_an_openai_style_choice_gives_its_text_and_every_tool_it_calls() -> None:
    message = {"role": "assistant", "content": "Refund sent.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": "{}"}},
        {"id": "c2", "name": "notify"},  # a flat call (no function object)
        "garbage"]}  # fmt: skip
    assert output(_span(_choice(message))) == ("Refund sent.", ["refund", "notify"])


def test_an_openai_style_choice_without_tool_calls_is_its_text() -> None:
    assert output(_span(_choice({"role": "assistant", "content": "Hi.", "tool_calls": None}))) == ("Hi.", [])
    assert output(_span(_choice({"role": "assistant", "content": None, "tool_calls": [
        {"function": {"name": "search"}}]}))) == ("", ["search"])  # fmt: skip


def test_an_openai_style_choice_with_content_blocks_gives_their_text() -> None:
    message = {"role": "assistant", "content": [{"text": "Looking it up."}, {"text": "Found A17."}]}
    assert output(_span(_choice(message))) == ("Looking it up.\nFound A17.", [])


@pytest.mark.parametrize(("recorded", "expected"), [
    ("Refund sent.", "Refund sent."),  # plain text
    (json.dumps("Refund sent."), "Refund sent."),  # a JSON-encoded string: its text
    ("42", "42"),  # an answer that reads as a number is still the answer
])  # fmt: skip
def test_a_plain_text_choice_is_its_text(recorded: str, expected: str) -> None:
    assert output(_span(_choice(recorded))) == (expected, [])


@pytest.mark.parametrize("placeholder", ["[REDACTED]", "<REDACTED>", "REDACTED", "{}", "N/A", " [REDACTED] "])
def test_a_redaction_placeholder_is_never_content(placeholder: str) -> None:
    assert output(_span(_choice(placeholder))) == ("", [])
    assert first_user_text(_span(SpanEvent(USER_MESSAGE, {"content": placeholder}))) == ""


def test_every_choice_of_an_answer_is_kept_in_order_and_its_tools_with_it() -> None:
    span = _span(_choice([{"text": "First."}, {"toolUse": {"name": "f"}}]), _choice("Second."),
                 _choice([{"toolUse": {"name": "g"}}]))  # fmt: skip
    assert output(span) == ("First.\nSecond.", ["f", "g"])


def test_a_malformed_content_block_does_not_hide_the_blocks_after_it() -> None:
    span = _span(_choice([None, "stray", {"text": "Kept."}, {"toolUse": {"name": "f"}}]))
    assert output(span) == ("Kept.", ["f"])


def test_the_task_is_the_first_user_message_event_with_text() -> None:
    span = _span(SpanEvent("gen_ai.system.message", {"content": '[{"text": "You are triage."}]'}),
                 SpanEvent(USER_MESSAGE, {"content": "[REDACTED]"}),
                 SpanEvent(USER_MESSAGE, {"content": '[{"text": "Refund A17."}]'}),
                 SpanEvent(USER_MESSAGE, {"content": '[{"text": "Later."}]'}))  # fmt: skip
    assert first_user_text(span) == "Refund A17."


# --- the parts format ---------------------------------------------------------------------------------------------


def test_the_task_skips_the_system_prompt_and_empty_user_turns() -> None:
    inputs = [{"role": "system", "parts": [{"type": "text", "content": "You are triage."}]},
              {"role": "user", "parts": [{"type": "tool_call_response", "id": "c0", "response": "ok"}]},
              "not a message",
              {"role": "user", "parts": [{"type": "text", "content": "Refund A17."}]}]  # fmt: skip
    assert first_user_text(_span(gen_ai__input__messages=json.dumps(inputs))) == "Refund A17."


def test_an_attribute_that_records_no_user_turn_gives_no_task_even_with_events() -> None:
    """The attribute is the newer record: when present it decides, even where older events remain."""
    inputs = [{"role": "system", "parts": [{"type": "text", "content": "You are triage."}]}]
    span = _span(SpanEvent(USER_MESSAGE, {"content": "stale"}), gen_ai__input__messages=json.dumps(inputs))
    assert first_user_text(span) == ""
    assert first_user_text(_span(gen_ai__input__messages="not json")) == ""


def test_the_details_event_holds_the_input_and_the_output() -> None:
    details = SpanEvent("gen_ai.client.inference.operation.details", {
        sc.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Refund A17."}]}]),
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Done."}, {"type": "tool_call", "id": "c1", "name": "refund"}]}])})  # fmt: skip
    span = _span(SpanEvent("other", {sc.GEN_AI_OUTPUT_MESSAGES: "[]"}), details)
    assert (first_user_text(span), output(span)) == ("Refund A17.", ("Done.", ["refund"]))


# --- Google ADK's legacy schema -----------------------------------------------------------------------------------

ADK_REQUEST = "gcp.vertex.agent.llm_request"
ADK_RESPONSE = "gcp.vertex.agent.llm_response"


def test_adk_legacy_response_gives_its_text_and_function_calls() -> None:
    response = {"content": {"role": "model", "parts": [{"text": "Checking."}, {"function_call": {"name": "lookup"}},
                                                       "stray", {"text": "Then refund."}]}}  # fmt: skip
    assert output(_span(**{ADK_RESPONSE: json.dumps(response)})) == ("Checking.\nThen refund.", ["lookup"])


@pytest.mark.parametrize("response", [{"content": None, "error_code": "SAFETY"}, {"content": {"role": "model"}},
                                      {"content": {"parts": "text"}}, ["not", "an", "object"], "not json"])  # fmt: skip
def test_an_adk_legacy_response_without_parts_is_empty(response: Any) -> None:
    """A blocked or empty model response records no parts: no text, and no failure."""
    value = response if isinstance(response, str) else json.dumps(response)
    assert output(_span(**{ADK_RESPONSE: value})) == ("", [])


def test_adk_legacy_task_is_the_first_user_turn_even_after_a_greeting() -> None:
    request = {"contents": ["stray",
                            {"role": "model", "parts": [{"text": "Hello, how can I help?"}]},
                            {"role": "user", "parts": [{"function_call": {"name": "x"}}]},
                            {"role": "user", "parts": [{"text": "Refund A17."}]}]}  # fmt: skip
    assert first_user_text(_span(**{ADK_REQUEST: json.dumps(request)})) == "Refund A17."
    assert first_user_text(_span(**{ADK_REQUEST: json.dumps({"contents": "none"})})) == ""


# --- through the adapter ------------------------------------------------------------------------------------------


def _two_agents(first: SpanEvent, second: SpanEvent) -> Adapted:
    t = _Trace()
    root = t.add("invoke_swarm", None, gen_ai__operation__name="invoke_swarm", gen_ai__system="strands-agents")
    for name, event in (("a", first), ("b", second)):
        agent = t.add(f"invoke_agent {name}", root, gen_ai__operation__name="invoke_agent", gen_ai__agent__name=name)
        t.add("chat", agent, (event,), gen_ai__operation__name="chat")
    adapted = adapt(t.spans)
    assert isinstance(adapted, Adapted)
    return adapted


def test_a_redacted_run_is_adapted_without_content_and_names_the_switch() -> None:
    adapted = _two_agents(_choice("[REDACTED]"), _choice("<REDACTED>"))
    assert messages(adapted.records) == [("a", ""), ("b", "")]
    assert adapted.no_content is not None and "gen_ai_unredacted_attributes" in adapted.no_content


def test_an_openai_style_tool_call_is_a_tool_call_message() -> None:
    call = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "lookup_order"}}]}
    adapted = _two_agents(_choice(call), _choice("Approved."))
    assert messages(adapted.records) == [("a", "lookup_order"), ("b", "Approved.")]
    assert [m.get(sc.MESSAGE_KIND) for m in adapted.messages] == [sc.KIND_TOOL_CALL, sc.KIND_MESSAGE]
