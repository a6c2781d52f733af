"""The collector with `--judge llm`: the real LLMJudge against an OpenAI-compatible server, labels on the spans."""

from __future__ import annotations

from pathlib import Path

from mast_otel import semconv as sc
from mast_otel.collector import CollectorService
from tests.collector.conftest import FakeClock, collector_config, recorded, scrape
from tests.collector.sink import OtlpSink
from tests.collector.test_pipeline import roots, send
from tests.judge.fake_openai import answer, completion, fake_openai


def test_llm_judge_labels_reach_the_spans(sink: OtlpSink, tmp_path: Path) -> None:
    # prepare: every judge request is answered "1.3 present, evidence the first message"
    spans = recorded(1)
    with fake_openai([completion(answer({"1.3": ["M1"]}, summary="planner repeats itself"))] * 3) as server:
        config = collector_config(
            tmp_path, sink, judge="llm", judge_base_url=server.base_url, judge_model="judge-m", judge_api_key="k"
        )
        clock = FakeClock()
        service = CollectorService(config, clock=clock)  # no judge given: built from the config
        service.start(pipeline=False)
        try:
            # test
            send(service, spans)
            service.tick()
            clock.advance(config.quiet_period)
            service.tick()
            assert service.flush()
            got = sink.wait_count(len(spans))
            text = scrape(service)
        finally:
            service.stop(grace=0.5)
    # verify
    (root,) = roots(got)
    a = root.attributes
    assert a[sc.LABEL_SOURCE] == sc.SOURCE_LLM and a[sc.JUDGE_STATUS] == sc.JUDGE_OK
    assert a[sc.FAILURE_MODES] == ("1.3",) and a[sc.JUDGE_MODEL] == "judge-m" and a[sc.JUDGE_TOKENS_IN] > 0
    first_message = min(
        (s for s in got if s.attributes.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE),
        key=lambda s: s.attributes[sc.MESSAGE_INDEX],
    )
    assert first_message.attributes[sc.FAILURE_MODE] == "1.3"
    assert len(server.requests) == 1, "one conversation, one judge call"
    assert ('mast_failure_mode_total{category="FC1",framework="custom",mode="1.3",service="shop",version="unknown"} '
            '1.0') in text  # fmt: skip
