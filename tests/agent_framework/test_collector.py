"""Microsoft Agent Framework's own GenAI spans of the refund desk (examples/agent_framework_desk.py: a
``HandoffBuilder`` workflow of three agents, a tool call) through a real collector process: one judged
conversation on ``workflow.run``, the agents, handoffs and tool calls of the workflow's own events, the text with
``ENABLE_SENSITIVE_DATA=true``, and a no-content verdict naming that switch by default and with the v1.36
baseline conventions (whose text goes to log records only).
Runs in ``nox -s agent_framework``; skipped elsewhere."""

from tests.adapters._require import framework

framework("agent_framework", "agent_framework", "agent_framework_orchestrations", "grpc")

from tests.genai.collector import desk_test, passthrough_test  # noqa: E402

test_desk_through_the_collector = desk_test("agent_framework")
test_desk_in_passthrough_mode = passthrough_test("agent_framework", "content")
