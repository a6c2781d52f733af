"""Pydantic AI's own GenAI spans of the refund desk (examples/pydantic_ai_desk.py: three agents, delegation
through tools, a tool call) through a real collector process: one judged conversation on the outermost
``invoke_agent``, the agents, delegations and tool calls of Pydantic AI's own message lists, the text with its
default ``include_content=True``, and a no-content verdict naming the switch with ``include_content=False``.
Runs in ``nox -s pydantic_ai``; skipped elsewhere."""

from tests.adapters._require import framework

framework("pydantic_ai", "pydantic_ai", "grpc")

from tests.genai.collector import desk_test, passthrough_test  # noqa: E402

test_desk_through_the_collector = desk_test("pydantic_ai")
test_desk_in_passthrough_mode = passthrough_test("pydantic_ai", "default")
