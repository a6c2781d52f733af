"""A MetaGPT run and an AG2 run render into the judge's transcript in one format.

The AG2 side runs in the main environment (``tests/metagpt/_ag2_transcript.py``, the AG2 group-chat example),
the MetaGPT side here; both are rendered by ``mast_otel.judge.transcript`` and checked against one grammar.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tests.frameworks import REPO, main_python_that_imports
from tests.metagpt.conftest import SKIP_REASON

pytest.importorskip("metagpt", reason=SKIP_REASON)

from mast_otel.judge.transcript import CONTINUATION, render
from mast_otel.spans import from_readable_span
from tests.metagpt.scenarios import IDEA, scripted_context, software_team

# The first physical line of each transcript line, by kind: the format the judge reads, whatever the framework.
GRAMMAR = {
    "root": re.compile(r"^\[R\] conversation \S+ \(framework (ag2|metagpt); agents: [^)]+\); task: \S.*$"),
    "message": re.compile(r"^\[M(?P<n>\d+)\] \S+ -> \S+( \(relayed to [^)]+\))?(: .*)?$"),
    "handoff": re.compile(r"^\[H(?P<n>\d+)\] handoff \S+ -> \S+ \(reason: [a-z_]+; candidates: [^)]+\)$"),
    "end": re.compile(r"^\[R\] termination: [a-z_]+; after \d+ messages \(max_rounds \d+\)(; by \S+)?; detail: .+$"),
}


def assert_grammar(lines: list[tuple[str, str]]) -> None:
    kinds = [kind for kind, _ in lines]
    assert kinds[0] == "root" and kinds[-1] == "end"
    assert set(kinds) == set(GRAMMAR), "messages and handoffs, between the task and the termination"
    numbers: dict[str, list[int]] = {"message": [], "handoff": []}
    for kind, text in lines:
        first = text.split("\n", 1)[0]
        found = GRAMMAR[kind].match(first)
        assert found, f"{kind} line out of format: {first!r}"
        if kind in numbers:
            numbers[kind].append(int(found.group("n")))
        for continuation in text.split("\n")[1:]:
            assert continuation.startswith(CONTINUATION.lstrip("\n")), "a message's later lines cannot pass for refs"
    for refs in numbers.values():
        assert refs == list(range(1, len(refs) + 1))


def ag2_transcript() -> list[tuple[str, str]]:
    python = main_python_that_imports("autogen", "the AG2 side")
    done = subprocess.run(
        [python, "-m", "tests.metagpt._ag2_transcript"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [(kind, text) for kind, text in json.loads(done.stdout.strip().splitlines()[-1])]


async def test_metagpt_and_ag2_transcripts_share_one_format(instrumentor: Any, script: Any, span_exporter: Any) -> None:
    await software_team(scripted_context(), cycle=True).run(n_round=3, idea=IDEA)
    transcript = render([from_readable_span(s) for s in span_exporter.get_finished_spans()])
    metagpt = [(line.kind, line.text()) for line in transcript.lines]

    assert_grammar(metagpt)
    root_head = "[R] conversation Team (framework metagpt; agents: Human, Alice, Bob, Carol); task: "
    assert metagpt[0][1].startswith(root_head)
    assert metagpt[1][1] == f"[M1] Human -> <all> (relayed to Alice, Bob, Carol): {IDEA}"
    assert metagpt[2][1] == "[H1] handoff Human -> Alice (reason: routing; candidates: Alice, Bob, Carol)"
    assert metagpt[3][1] == "[M2] Alice -> <all> (relayed to Bob, Carol): Alice output 1"
    assert metagpt[-1][1].startswith("[R] termination: max_rounds; after ")
    assert transcript.refs["M2"] == f"{_span_id_of(span_exporter, 'Alice'):016x}"

    ag2 = ag2_transcript()
    assert_grammar(ag2)
    assert ag2[0][1].startswith("[R] conversation chat_manager (framework ag2; ")


def _span_id_of(exporter: Any, sender: str) -> int:
    from mast_otel import semconv as sc

    spans = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time)
    first = next(s for s in spans if (s.attributes or {}).get(sc.MESSAGE_SENDER) == sender)
    return int(first.get_span_context().span_id)
