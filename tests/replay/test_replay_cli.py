"""``mast-otel replay`` end to end: the venv's console script, a real OTLP receiver (gRPC and HTTP), real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mast_otel import semconv as sc
from mast_otel.replay import spans_for_record
from mast_otel.spans import SpanRecord, conversation_roots
from mast_otel.steplist import StepRecord
from tests.mad_data import AG2_SAMPLE, AG2_SAMPLE_INDICES, METAGPT_SAMPLE
from tests.otlp_sink import otlp_sink
from tests.servers import free_port

CONSOLE_SCRIPT = Path(sys.executable).parent / "mast-otel"


def _replay(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    if not CONSOLE_SCRIPT.exists():
        pytest.skip(f"console script not installed at {CONSOLE_SCRIPT} (pip install -e .)")
    return subprocess.run(
        [str(CONSOLE_SCRIPT), "replay", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _expected_span_count(records: list[StepRecord]) -> int:
    return sum(len(spans_for_record(r)) for r in records)


def _roots_by_key(spans: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {str(root.get(sc.REPLAY_TRACE_KEY)): root for root in conversation_roots(spans)}


def test_replay_over_otlp_grpc(ag2_sample: list[StepRecord]) -> None:
    offset = AG2_SAMPLE_INDICES.index(220)  # records 220-229 of the full file
    records = ag2_sample[offset : offset + 10]
    expected = _expected_span_count(records)
    with otlp_sink() as sink:
        done = _replay(str(AG2_SAMPLE), "--endpoint", sink.grpc_endpoint, "--offset", str(offset), "--limit", "10",
                       "--service-name", "replay-test")  # fmt: skip
        assert done.returncode == 0, done.stderr
        spans = sink.wait_for_spans(expected)
    assert len(spans) == expected
    assert sink.requests("http") == []
    assert done.stdout.startswith(f"replayed 10 conversations, {expected} spans to {sink.grpc_endpoint} in ")
    roots = _roots_by_key(spans)
    assert set(roots) == {r.trace_key for r in records}
    mmlu = roots["AG2_MMLU_GPT4o_Mini_3"]
    assert mmlu.service_name == "replay-test"
    assert mmlu.get(sc.MAST_FRAMEWORK) == "ag2"
    assert mmlu.get(sc.REPLAY_RECORD_INDEX) == AG2_SAMPLE_INDICES.index(226)  # its position in the file replayed
    assert mmlu.get(sc.REPLAY_BENCHMARK) == "MMLU"
    assert mmlu.get(sc.reference_fm_attribute("2.2")) is True
    assert mmlu.get(sc.reference_fm_attribute("3.3")) is False
    assert mmlu.get(sc.REFERENCE_FAILURE_MODES) == ("2.2", "2.3")
    assert mmlu.get(sc.TERMINATION_REASON) == sc.TERMINATION_MESSAGE
    assert len({s.trace_id for s in spans}) == 10


def test_replay_over_otlp_http(metagpt_sample: list[StepRecord]) -> None:
    records = metagpt_sample[:5]
    expected = _expected_span_count(records)
    with otlp_sink() as sink:
        done = _replay(str(METAGPT_SAMPLE), "--endpoint", sink.http_endpoint, "--limit", "5", "--rate", "50")
        assert done.returncode == 0, done.stderr
        spans = sink.wait_for_spans(expected)
    assert len(spans) == expected
    assert sink.requests("grpc") == []
    roots = _roots_by_key(spans)
    assert set(roots) == {r.trace_key for r in records}
    for record in records:
        root = roots[record.trace_key]
        assert root.get(sc.MAST_FRAMEWORK) == "metagpt"
        assert root.get(sc.REPLAY_MAD_TRACE_KEY) == record.mad_trace_key
        assert root.get(sc.CONVERSATION_ROUNDS) == len(record.steps)
        assert root.service_name == "mast-otel-replay"


def test_malformed_file_exits_2_naming_the_record(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    good = {"steps": [{"agent": "a", "content": "x"}], "metadata": {"mas_name": "AG2", "mad_trace_key": "k"}}
    bad.write_text(json.dumps([good, {"steps": [{"agent": "a", "content": 3}], "metadata": {}}]))
    done = _replay(str(bad), "--endpoint", "http://127.0.0.1:9")
    assert done.returncode == 2
    assert "record 1: steps[0].content must be a string" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    done = _replay(str(tmp_path / "none.json"))
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_closed_port_exits_1_at_once() -> None:
    done = _replay(str(METAGPT_SAMPLE), "--endpoint", f"http://127.0.0.1:{free_port()}", timeout=20)
    assert done.returncode == 1
    assert "cannot connect to" in done.stderr


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_refusing_endpoint_exits_1(transport: str) -> None:
    with otlp_sink(refuse=True) as sink:
        endpoint = sink.grpc_endpoint if transport == "grpc" else sink.http_endpoint
        done = _replay(str(METAGPT_SAMPLE), "--endpoint", endpoint, "--limit", "3")
    assert done.returncode == 1
    assert f"{endpoint} did not accept" in done.stderr


def test_endpoint_with_a_wrong_path_is_a_usage_error() -> None:
    done = _replay(str(METAGPT_SAMPLE), "--endpoint", "http://127.0.0.1:4318/v1/logs")
    assert done.returncode == 2
    assert "/v1/traces" in done.stderr
