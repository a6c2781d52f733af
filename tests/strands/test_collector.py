"""Strands Agents' own GenAI spans of the refund desk (examples/strands_desk.py: a Swarm of three agents,
``handoff_to_agent``, a tool call) through a real collector process: one judged conversation on ``invoke_swarm``,
the agents, handoffs and tool calls of the swarm's own record, the text by default (span events), under the latest
conventions (as events, and as attributes), and a no-content verdict naming the switch when redacted.
Runs in ``nox -s strands``; skipped elsewhere."""

from tests.adapters._require import framework

framework("strands", "strands", "grpc")

from tests.genai.collector import desk_test, passthrough_test  # noqa: E402

test_desk_through_the_collector = desk_test("strands")
test_desk_in_passthrough_mode = passthrough_test("strands", "latest-attributes")
