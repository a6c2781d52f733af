"""The adapters on fixtures recorded from real AG2 runs (AG2's built-in tracing, OpenInference, both with
mast-otel): messages, senders and handoffs against the framework's own record, evidence mapped back to the
foreign spans, mast-otel's spans preferred, and no verdict for a trace that is not a multi-agent conversation."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from mast_otel import semconv as sc
from mast_otel.adapters import Adapted, NotAConversation, Tree, adapt, foreign_units, root_candidate
from mast_otel.evaluation.steplist_input import load_conversations
from mast_otel.judge.foreign import EXTRA_FRAMEWORK, EXTRA_SOURCE, judge_spans, not_a_conversation
from mast_otel.judge.model import ModeLabel, Verdict
from mast_otel.judge.transcript import render
from mast_otel.spans import SpanRecord
from tests.adapters._fixtures import DATA, fixture, handoffs, messages, recipients

# fixture -> (adapter, framework, an agent whose messages a judge cites)
FOREIGN = {
    "ag2_builtin": ("ag2-builtin", "ag2", "coder"),
    "ag2_builtin_auto": ("ag2-builtin", "ag2", "coder"),
    "openinference_ag2": ("openinference", "ag2", "coder"),
    "openinference_openai_agents": ("openinference", "openai-agents", "orders_agent"),
    "openinference_autogen_agentchat": ("openinference", "autogen-agentchat", "writer"),
    "openinference_langgraph": ("openinference", "langgraph", "researcher"),
    "openinference_smolagents": ("openinference", "smolagents", "researcher"),
    "openinference_crewai": ("openinference", "crewai", "Writer"),
    "openllmetry_langgraph": ("openllmetry", "langgraph", "researcher"),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_transcript_matches_the_frameworks_record(name: str) -> None:
    spans, oracle = fixture(name)
    adapted = adapt(spans)
    assert isinstance(adapted, Adapted)
    assert (adapted.source, adapted.framework) == FOREIGN[name][:2]
    assert messages(adapted.records) == oracle["messages"]  # count, order, senders and text
    assert handoffs(adapted.records) == oracle["handoffs"]
    if "recipients" in oracle:  # who each message went to, as each agent's own chat record says
        assert sorted({(s, r) for s, rs in recipients(adapted.records) for r in rs}) == oracle["recipients"]
    if "candidates" in oracle:  # each LLM speaker selection: the chosen speaker and the candidates offered
        assert [(str(h.get(sc.HANDOFF_TO)), str(h.get(sc.HANDOFF_DETAIL))) for h in adapted.handoffs] == oracle[
            "candidates"
        ]
    for _, detail in oracle.get("termination", ()):  # where the source records it: the framework's stop reason
        assert adapted.records[0].get(sc.TERMINATION_DETAIL) == detail
    # The root's labels go on the foreign root: the outermost agent / workflow span, the one the collector holds.
    assert [unit[0].span_id for unit in foreign_units(spans)] == [adapted.root_span_id]
    # Every synthetic span maps back to a span the user has.
    assert set(adapted.origin.values()) <= {s.span_id for s in spans}
    # The judge's transcript reads the same messages (the view and renderer need no change).
    lines = [line for line in render(list(adapted.records)).lines if line.kind == sc.SPAN_TYPE_MESSAGE]
    assert [line.sender for line in lines] == [sender for sender, _ in oracle["messages"]]


class _CitingJudge:
    """Cites every message one agent sent as 1.3."""

    name = "citing"

    def __init__(self, agent: str = "coder") -> None:
        self.agent = agent
        self.seen: list[SpanRecord] = []

    def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
        self.seen = list(spans)
        cited = tuple(s.span_id for s in spans if s.get(sc.MESSAGE_SENDER) == self.agent)
        return Verdict(status=sc.JUDGE_OK, source=sc.SOURCE_RULES, modes=(ModeLabel("1.3", cited, "repeats"),))


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_evidence_lands_on_the_foreign_spans(name: str) -> None:
    spans, oracle = fixture(name)
    source, framework, agent = FOREIGN[name]
    verdict = judge_spans(_CitingJudge(agent), spans)
    assert (verdict.extra[EXTRA_SOURCE], verdict.extra[EXTRA_FRAMEWORK]) == (source, framework)
    tree = Tree(spans)
    cited = [tree.by_id[i] for i in verdict.modes[0].evidence_span_ids]  # KeyError: an id the user does not have
    assert len(cited) == sum(sender == agent for sender, _ in oracle["messages"]) > 0
    # Each cited span is the agent's own span, or a model call inside it.
    assert all(any(agent in a.name for a in [s, *tree.ancestors(s)]) for s in cited)


def test_a_run_traced_twice_is_judged_from_mast_otels_spans() -> None:
    spans, oracle = fixture("mixed_ag2")
    assert any(s.get("openinference.span.kind") for s in spans)  # both instrumentations recorded the run
    assert adapt(spans) is None
    judge = _CitingJudge()
    verdict = judge_spans(judge, spans)
    assert EXTRA_SOURCE not in verdict.extra
    assert judge.seen == spans  # the judge got the spans as they came: its view picks the recorder root
    assert messages(spans) == oracle["messages"]
    assert foreign_units(spans) == []  # and the file reader finds no second conversation in it


def test_a_single_agent_call_is_never_judged(tmp_path) -> None:
    spans, _ = fixture("openinference_single_agent")
    refused = adapt(spans)
    assert isinstance(refused, NotAConversation) and "1 agent" in refused.reason

    class Never:
        name = "never"

        def judge(self, spans: Sequence[SpanRecord], *, partial: bool = False) -> Verdict:
            raise AssertionError("judged a trace with no conversation")

    assert not_a_conversation(judge_spans(Never(), spans))
    path = tmp_path / "single.json"
    path.write_text(json.dumps(json.loads((DATA / "openinference_single_agent.json").read_text())["otlp"]))
    assert list(load_conversations(path)) == []


def test_root_candidates_are_agent_and_workflow_spans_only() -> None:
    def held(**attrs: str) -> bool:
        return root_candidate(attrs.get)

    assert held(**{"openinference.span.kind": "AGENT"}) and held(**{"openinference.span.kind": "CHAIN"})
    assert held(**{"ag2.span.type": "conversation"})
    assert not held(**{"openinference.span.kind": "LLM"}) and not held(**{"ag2.span.type": "agent"})
    assert not held(**{"http.method": "GET"}) and not held()


def test_the_judge_cli_reads_foreign_otlp_files(tmp_path) -> None:
    """``mast-otel judge FILE``'s reader: one conversation per foreign trace, none for the single call."""
    docs = []
    for name in (*FOREIGN, "openinference_single_agent"):
        docs.append(json.loads((DATA / f"{name}.json").read_text())["otlp"])
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    found = list(load_conversations(path))
    assert sorted((c.adapted.source, c.framework) for c in found if c.adapted) == sorted(
        (source, framework) for source, framework, _ in FOREIGN.values()
    )
    assert len(list(load_conversations(path, limit=1))) == 1


def test_the_judge_cli_labels_foreign_spans(tmp_path, capsys) -> None:
    """``mast-otel judge FILE`` on AG2's built-in tracing, with a scripted judge that marks the coder's messages
    1.3: the labels cite the user's spans, not the adapter's synthetic ones."""
    from mast_otel.cli import main
    from tests.judge.fake_openai import citing, fake_openai

    spans, oracle = fixture("ag2_builtin")
    path = tmp_path / "ag2.json"
    path.write_text(json.dumps(json.loads((DATA / "ag2_builtin.json").read_text())["otlp"]))
    with fake_openai([citing({"1.3": r"^coder -> "})]) as server:
        assert main(["judge", str(path), "--base-url", server.base_url, "--model", "scripted"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["source"], row["framework"]) == ("ag2-builtin", "ag2")
    verdict = row["verdict"]
    assert verdict["extra"]["source"] == "ag2-builtin"
    cited = {i for m in verdict["modes"] for i in m["evidence_span_ids"]}
    by_id = {s.span_id: s for s in spans}
    assert "1.3" in verdict["failure_modes"] and cited and cited <= set(by_id)
    assert {by_id[i].name for m in verdict["modes"] if m["mode"] == "1.3" for i in m["evidence_span_ids"]} <= {
        f"invoke_agent {sender}" for sender, _ in oracle["messages"]
    }


def test_malformed_attribute_values_never_break_an_adapter() -> None:
    """Attribute values are another program's data: each recorded fixture with random attributes replaced by
    values of the wrong type or broken JSON still yields a conversation, a refusal or None, never an exception."""
    import dataclasses
    import random

    rnd = random.Random(14)
    weird: list[object] = [0, 1.5, True, ("a", 1), "{", "[", "null", '{"raw": 3}', '[{"parts": 5}]',
                           '[{"parts": [{"type": "text", "content": 3}]}]', '{"inputs": {"messages": [3]}}',
                           '{"messages": [{"data": 4}]}', '{"stop_reason": 5}', '[{"agent_role": 1}]', ""]  # fmt: skip
    for path in sorted(DATA.glob("*.json")):
        spans, _ = fixture(path.stem)
        for _ in range(40):
            mutated = [
                dataclasses.replace(
                    s, attributes={k: rnd.choice(weird) if rnd.random() < 0.3 else v for k, v in s.attributes.items()}
                )
                for s in spans
            ]
            assert adapt(mutated) is None or isinstance(adapt(mutated), (Adapted, NotAConversation))
