"""Google ADK's own GenAI spans of the refund desk (examples/google_adk_desk.py: a root agent transferring to
sub-agents, a tool call) through a real collector process: one judged conversation on ADK's ``invoke_workflow``
root (never taken for a mast-otel conversation), the agents, transfers and tool calls of the session's own events,
the text with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``, a no-content verdict naming that
switch by default, and the legacy schema v1.
Runs in ``nox -s google_adk``; skipped elsewhere."""

from tests.adapters._require import framework

framework("google_adk", "google.adk", "litellm", "grpc")

from tests.genai.collector import desk_test, passthrough_test  # noqa: E402

test_desk_through_the_collector = desk_test("google_adk")
test_desk_in_passthrough_mode = passthrough_test("google_adk", "content")
