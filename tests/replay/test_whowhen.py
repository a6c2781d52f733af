"""Who&When runs replayed as live spans: every history message one message span, in order, right sender.

The oracle is the run file's own ``history``; the human labels must land on the root unchanged. The three runs in
tests/data/whowhen always run; the full 126 run when ../shared/whowhen (or MAST_OTEL_WHOWHEN_DATA) exists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mast_otel import semconv as sc
from mast_otel.replay import load_records, spans_for_record
from mast_otel.spans import SpanRecord, conversation_roots
from mast_otel.whowhen import WhoWhenError, WhoWhenRun, load_whowhen, to_step_record
from tests.otlp_sink import otlp_sink

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tests" / "data" / "whowhen"
FULL = Path(os.environ.get("MAST_OTEL_WHOWHEN_DATA", REPO.parent / "shared" / "whowhen" / "algorithm-generated"))


def _messages(spans: list[SpanRecord]) -> list[SpanRecord]:
    msgs = [s for s in spans if s.get(sc.MAST_SPAN_TYPE) == sc.SPAN_TYPE_MESSAGE]
    return sorted(msgs, key=lambda s: int(s.get(sc.MESSAGE_INDEX)))  # type: ignore[arg-type]


def _check_run(run: WhoWhenRun, spans: list[SpanRecord]) -> None:
    (root,) = conversation_roots(spans)
    messages = _messages(spans)
    assert [m.get(sc.MESSAGE_SENDER) for m in messages] == [h.sender for h in run.history], run.source
    assert [m.get(sc.MESSAGE_INDEX) for m in messages] == list(range(len(run.history)))
    assert root.get(sc.REFERENCE_DECISIVE_AGENT) == run.mistake_agent
    assert root.get(sc.REFERENCE_DECISIVE_STEP) == run.mistake_step
    assert root.get(sc.REFERENCE_DECISIVE_REASON) == run.mistake_reason
    assert root.get(sc.CONVERSATION_TASK) == run.question[: len(str(root.get(sc.CONVERSATION_TASK)))]


def test_sample_runs_replay_one_message_span_per_history_entry() -> None:
    runs = load_whowhen(SAMPLE)
    assert [r.source for r in runs] == ["1.json", "10.json", "59.json"]
    raw = json.loads((SAMPLE / "1.json").read_text())
    assert [m.content for m in runs[0].history] == [m["content"] for m in raw["history"]]
    for i, run in enumerate(runs):
        _check_run(run, spans_for_record(to_step_record(run, i)))


def test_a_decisive_step_whose_sender_differs_from_the_labelled_agent_is_kept_as_labelled() -> None:
    (run,) = load_whowhen(SAMPLE / "59.json")
    assert run.history[run.mistake_step].sender != run.mistake_agent  # the file says so; we do not "fix" it
    (root,) = conversation_roots(spans_for_record(to_step_record(run)))
    assert root.get(sc.REFERENCE_DECISIVE_AGENT) == run.mistake_agent


def test_all_126_runs_match_their_histories() -> None:
    if not FULL.is_dir():
        pytest.skip(f"Who&When runs not found at {FULL} (set MAST_OTEL_WHOWHEN_DATA)")
    runs = load_whowhen(FULL)
    assert len(runs) == 126
    for i, run in enumerate(runs):
        _check_run(run, spans_for_record(to_step_record(run, i)))


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"history": [], "mistake_agent": "a", "mistake_step": "0", "question": "q"}, "non-empty list"),
        ({"history": [{"name": "a", "content": "x"}], "mistake_agent": "a", "mistake_step": "3", "question": "q"},
         "outside the history"),
        ({"history": [{"name": "a", "content": "x"}], "mistake_agent": "a", "mistake_step": "one", "question": "q"},
         "must be an integer"),
        ({"history": [{"content": "x"}], "mistake_agent": "a", "mistake_step": "0", "question": "q"}, "'name'"),
    ],
)
def test_malformed_runs_are_refused_naming_file_and_field(tmp_path: Path, doc: dict[str, object], message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(WhoWhenError, match=message) as caught:
        load_records(path)
    assert "bad.json" in str(caught.value)


def replay_over_otlp(directory: Path, expected_spans: int) -> tuple[list[SpanRecord], list[SpanRecord]]:
    """``mast-otel replay DIRECTORY`` to a real OTLP receiver: every span received, and the roots in file order."""
    with otlp_sink() as sink:
        done = subprocess.run(
            [sys.executable, "-m", "mast_otel.cli", "replay", str(directory), "--endpoint", sink.grpc_endpoint],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        spans = sink.wait_for_spans(expected_spans)
    roots = sorted(conversation_roots(spans), key=lambda r: int(r.get(sc.REPLAY_RECORD_INDEX)))  # type: ignore[arg-type]
    return spans, roots


def test_replay_cli_sends_a_directory_of_runs_over_otlp(tmp_path: Path) -> None:
    runs = load_whowhen(SAMPLE)
    expected = sum(len(spans_for_record(to_step_record(r, i))) for i, r in enumerate(runs))
    spans, roots = replay_over_otlp(SAMPLE, expected)
    assert [r.get(sc.REPLAY_TRACE_ID) for r in roots] == ["1", "10", "59"]
    for run, root in zip(runs, roots, strict=True):
        _check_run(run, [s for s in spans if s.trace_id == root.trace_id])


def test_replay_cli_refuses_a_malformed_run_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "7.json"
    bad.write_text(json.dumps({"history": "nope", "mistake_agent": "a", "mistake_step": "0", "question": "q"}))
    done = subprocess.run([sys.executable, "-m", "mast_otel.cli", "replay", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "7.json: 'history' must be a non-empty list" in done.stderr
