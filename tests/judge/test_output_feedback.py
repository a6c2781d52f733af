"""The parser finds the answer wherever the model put it, and when it refuses one, its message (fed back to the
model on the retry) says exactly what is wrong: the field paths of the first five problems, an empty answer, no
answer object at all, a decisive step that cites no message of the transcript or an agent that never spoke."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mast_otel.judge.output import OutputError, parse_output
from mast_otel.taxonomy import MODE_IDS


def answer(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "summary": "fine",
        "task_completed": True,
        "modes": {m: {"evidence": [], "reason": "", "present": False} for m in MODE_IDS},
        "decisive": None,
    }
    base.update(changes)
    return base


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_an_empty_answer_is_refused_as_empty(text: str) -> None:
    with pytest.raises(OutputError, match=r"^the answer was empty$"):
        parse_output(text)


def test_no_answer_object_is_refused_as_such() -> None:
    with pytest.raises(OutputError, match=r"^no JSON object with a 'modes' key was found$"):
        parse_output('I think {"summary": "x"} is all.')


def test_the_answer_is_found_after_broken_braces_and_other_objects() -> None:
    text = "Thinking {not json}. Draft: {\"summary\": \"draft\"}. Final: " + json.dumps(answer(summary="final"))
    assert parse_output(text).summary == "final"


def test_the_feedback_names_each_problem_by_its_path_five_at_most() -> None:
    bad = answer()
    del bad["summary"]
    for m in MODE_IDS[:6]:
        bad["modes"][m]["present"] = "maybe"
    with pytest.raises(OutputError) as refused:
        parse_output(json.dumps(bad))
    message = str(refused.value)
    assert message.startswith("the JSON does not match the schema: ")
    problems = message.removeprefix("the JSON does not match the schema: ").split("; ")
    assert len(problems) == 5
    assert problems[0].startswith("summary: ")
    assert all(p.startswith(f"modes.{m}.present: ") for p, m in zip(problems[1:], MODE_IDS, strict=False))


def test_evidence_that_is_not_a_reference_is_kept_as_written() -> None:
    out = answer()
    out["modes"]["1.3"] = {"evidence": ["[m3]", " the coder's reply "], "reason": "r", "present": True}
    assert parse_output(json.dumps(out)).modes["1.3"].refs() == ["M3", "the coder's reply"]


def test_a_decisive_step_must_cite_a_message_of_the_transcript_sent_by_an_agent_that_spoke() -> None:
    refs, speakers = {"M1": "span-1", "M7": "span-7"}, {"planner", "coder"}
    ok = parse_output(json.dumps(answer(decisive={"message": " [m7] ", "agent": "coder", "reason": "r"})))
    assert ok.decisive is not None and ok.decisive.ref() == "M7"
    ok.check_decisive(refs, speakers)
    unknown = parse_output(json.dumps(answer(decisive={"message": "M9", "agent": "coder", "reason": "r"})))
    with pytest.raises(OutputError, match=r"^decisive.message 'M9' is not a message reference \(M...\) of this "):
        unknown.check_decisive(refs, speakers)
    prose = parse_output(json.dumps(answer(decisive={"message": "the last one", "agent": "coder", "reason": ""})))
    assert prose.decisive is not None and prose.decisive.ref() == "the last one"
    with pytest.raises(OutputError):
        prose.check_decisive(refs, speakers)
    stranger = parse_output(json.dumps(answer(decisive={"message": "M1", "agent": "critic", "reason": "r"})))
    with pytest.raises(OutputError, match=r"^decisive\.agent 'critic' never sent a message in this transcript$"):
        stranger.check_decisive(refs, speakers)
    parse_output(json.dumps(answer())).check_decisive(refs, speakers)  # nothing decisive: nothing to check
