"""The rules the JavaScript captures (tests/data/captures/{openai_agents_js,langgraph_js,mastra}) added, each named
by the kind of evidence it reads, each case changing one thing in a real capture:

- a JavaScript instrumentation's scope is its npm package: a package instrumenting the library ``<x>`` names
  ``<x>-js``, a framework's own package names the framework by its npm scope;
- where no span is an agent's (LangGraph.js writes every graph node CHAIN), a graph-node span (``metadata``'s
  ``langgraph_node`` its own name) holding a model answer speaks for that node, a generic step never;
- where no span records the user's input the GenAI way (Mastra), the task is the user's message in the root agent
  run's own ``<namespace>.input`` attribute;
- a GenAI answer recorded as an empty text part alone (Mastra's answers that only call tools) called the
  ``execute_tool`` spans its step ran next.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, adapt, foreign_units
from mast_otel.adapters._evidence import scope_framework
from mast_otel.spans import SpanRecord, from_otlp_json
from tests.adapters._fixtures import handoffs

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _capture(framework: str, run: str) -> tuple[list[SpanRecord], dict[str, Any]]:
    data = json.loads((CAPTURES / framework / f"{run}.json").read_text(encoding="utf-8"))
    return from_otlp_json(json.dumps(data["otlp"])), data["expect"]


def _adapted(spans: list[SpanRecord]) -> Adapted:
    (adapted,) = [a for unit in foreign_units(spans) if isinstance(a := adapt(unit), Adapted)]
    return adapted


def test_an_npm_instrumentation_scope_names_the_javascript_framework() -> None:
    """``@<vendor>/[openinference-]instrumentation-<x>`` names ``<x>-js``; a framework's own package
    (``@mastra/otel-exporter``) names its npm scope; a model client's or a vendor's other package names none; a
    Python scope (dotted, or a distribution's name) is read as before."""
    assert scope_framework("@arizeai/openinference-instrumentation-openai-agents") == "openai-agents-js"
    assert scope_framework("@arizeai/openinference-instrumentation-langchain") == "langchain-js"
    assert scope_framework("@traceloop/instrumentation-langchain") == "langchain-js"
    assert scope_framework("@opentelemetry/instrumentation-some_lib") == "some-lib-js"
    assert scope_framework("@mastra/otel-exporter") == "mastra"
    assert scope_framework("@arizeai/openinference-instrumentation-openai") is None  # a model client
    assert scope_framework("@traceloop/instrumentation-anthropic") is None
    assert scope_framework("@opentelemetry/instrumentation-http") is None  # a transport
    assert scope_framework("@traceloop/node-server-sdk") is None  # a vendor's, instrumenting nothing
    assert scope_framework("openinference.instrumentation.openai_agents") == "openai-agents"
    assert scope_framework("pydantic-ai") == "pydantic-ai"
    spans, _ = _capture("openai_agents_js", "desk")
    assert _adapted(spans).framework == "openai-agents-js"
    spans, _ = _capture("mastra", "desk")
    assert _adapted(spans).framework == "mastra"


def test_langchain_js_on_a_langgraph_graph_is_langgraph_js() -> None:
    """LangChain's instrumentation traces LangGraph too, in JavaScript as in Python: the ``LangGraph`` root makes
    ``langchain-js`` ``langgraph-js``."""
    spans, _ = _capture("langgraph_js", "supervisor")
    assert _adapted(spans).framework == "langgraph-js"


def test_a_graph_node_holding_a_model_answer_speaks_where_no_span_is_an_agent() -> None:
    """LangGraph.js's instrumentation writes every node CHAIN: the node span (``metadata.langgraph_node`` its own
    name) holding a model answer speaks for itself, a generic step (``agent``, ``tools``) never; without the
    metadata no span says it is a node, and no agent replies."""
    spans, expect = _capture("langgraph_js", "supervisor")
    assert not any(s.get(sc.OI_SPAN_KIND) == sc.OI_KIND_AGENT for s in spans)
    adapted = _adapted(spans)
    root = adapted.records[0]
    assert sorted(a for a in root.get(sc.CONVERSATION_AGENTS) or () if a != "user") == sorted(expect["agents"])
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]
    assert "agent" not in (root.get(sc.CONVERSATION_AGENTS) or ())
    bare = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != sc.OI_METADATA})
            for s in spans]  # fmt: skip
    assert not [a for unit in foreign_units(bare) if isinstance(a := adapt(unit), Adapted)]
    assert isinstance(adapt(bare), NotAConversation)


def _without(spans: list[SpanRecord], span_id: str, key: str) -> list[SpanRecord]:
    return [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != key})
            if s.span_id == span_id else s for s in spans]  # fmt: skip


def test_with_no_genai_input_the_task_is_the_root_agent_runs_own_input() -> None:
    """Mastra writes no ``gen_ai.input.messages``: the request is the root ``invoke_agent``'s
    ``mastra.agent_run.input`` (plain text here; a message list or ``{"messages": [...]}`` elsewhere), the user's
    first message. Without it there is no task (the sub-agents' inputs are the lead's words, never read)."""
    spans, expect = _capture("mastra", "desk")
    assert not any(sc.GEN_AI_INPUT_MESSAGES in s.attributes for s in spans)
    root = next(s for s in spans if s.parent_span_id is None)
    adapted = _adapted(spans)
    assert adapted.records[0].get(sc.CONVERSATION_TASK) == expect["task"]
    first = min(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    assert (first.get(sc.MESSAGE_SENDER), first.get(sc.MESSAGE_CONTENT)) == ("user", expect["task"])
    assert len(adapted.messages) == expect["messages"]
    assert handoffs(adapted.records) == [tuple(h) for h in expect["handoffs"]]  # the ways back included
    listed = json.dumps(
        {
            "messages": [
                {"role": "system", "content": "ROLE_LEAD"},
                {"role": "user", "content": [{"type": "text", "text": expect["task"]}]},
            ]
        }
    )
    renamed = [dataclasses.replace(s, attributes={**{k: v for k, v in s.attributes.items()
                                                     if k != "mastra.agent_run.input"}, "acme.input": listed})
               if s is root else s for s in spans]  # fmt: skip
    assert _adapted(renamed).records[0].get(sc.CONVERSATION_TASK) == expect["task"]
    bare = _adapted(_without(spans, root.span_id, "mastra.agent_run.input"))
    assert bare.records[0].get(sc.CONVERSATION_TASK) is None
    assert len(bare.messages) == expect["messages"] - 1


def test_an_answer_recorded_as_an_empty_text_part_called_the_tools_its_step_ran_next() -> None:
    """Mastra writes an answer that only calls tools as one empty text part (the calls in its own
    ``mastra.model_step.output``): it is a tool-call message naming the ``execute_tool`` spans that ran next in its
    step (a delegation ``agent-<name>`` too). An answer recorded with no part at all says nothing of its calls."""
    spans, _ = _capture("mastra", "desk")
    adapted = _adapted(spans)
    ordered = sorted(adapted.messages, key=lambda m: m.get(sc.MESSAGE_INDEX))
    calls = [(m.get(sc.MESSAGE_SENDER), m.get(sc.MESSAGE_TOOL_CALLS)) for m in ordered
             if m.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL]  # fmt: skip
    assert calls == [("lead", "agent-researcher"), ("researcher", "lookup_order"), ("lead", "agent-writer")]
    assert all(m.get(sc.MESSAGE_CONTENT) for m in ordered)
    empty = json.dumps([{"role": "assistant", "parts": []}])
    partless = [dataclasses.replace(s, attributes={**s.attributes, sc.GEN_AI_OUTPUT_MESSAGES: empty})
                if s.get(sc.GEN_AI_OUTPUT_MESSAGES) == json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": ""}]}], separators=(",", ":")) else s for s in spans]  # fmt: skip
    assert partless != spans
    assert not any(m.get(sc.MESSAGE_KIND) == sc.KIND_TOOL_CALL for m in _adapted(partless).messages)
