"""A framework that traces itself with the GenAI conventions (Strands, ADK, Pydantic AI, Agent Framework) keeps
message text in span events as often as in attributes: ``report --conversation`` must draw the text the judge
read, checked against the framework's own record of the run."""

from __future__ import annotations

import json

import pytest

from mast_otel.collector.report import spans_from_otlp_json
from mast_otel.collector.report.picture import pictures_in_trace
from tests.adapters.test_genai import GENAI, WITH_CONTENT


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_the_picture_of_a_genai_run_shows_the_frameworks_messages(name: str) -> None:
    data = json.loads((GENAI / f"{name}.json").read_text(encoding="utf-8"))
    spans = list(spans_from_otlp_json(data["otlp"]))
    pictures = [p for trace_id in dict.fromkeys(s.trace_id for s in spans) for p in pictures_in_trace(spans, trace_id)]
    assert len(pictures) == 1, [p.name for p in pictures]
    (picture,) = pictures
    assert [(e.source, e.text) for e in picture.messages] == [tuple(m) for m in data["record"]["messages"]]
    assert set(data["record"]["agents"]) <= set(picture.agents)
