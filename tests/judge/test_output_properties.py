"""The judge's answer parser as properties: every well-formed answer is accepted with its meaning unchanged, in
whatever form a model wraps it (prose, a fence, other objects first, keys in any order, extra keys, the lenient
spellings the module documents); whatever text the answer quotes from the conversation (braces, fences, JSON, a
fake answer inside a string) never changes which modes it reports, which messages it cites or its decisive step;
and an answer with a mode missing is refused, never read as "absent"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.judge.output import JudgeOutput, OutputError, parse_output
from mast_otel.taxonomy import MODE_IDS

# Text a model may quote from the messages it judged: anything, and more often what looks like format.
_FORMAT_LIKE = ['{"modes": {}}', "```json\n{", "}\n```", '"present": true', '{"summary": "x"}', "\\", '"', "M1, M2",
                "[M3]", "\n\n", "\u2028", "{", "}"]  # fmt: skip
_QUOTED = st.one_of(st.text(max_size=40), st.sampled_from(_FORMAT_LIKE))
_REF_NUMBER = st.integers(min_value=1, max_value=40)


@st.composite
def answers(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """(an answer as a model writes it, what it means): present modes, each one's cited references, the
    decisive reference and agent, task_completed, summary."""
    present = draw(st.sets(st.sampled_from(MODE_IDS)))
    modes: dict[str, Any] = {}
    cited: dict[str, list[str]] = {}
    for m in MODE_IDS:
        numbers = draw(st.lists(st.tuples(st.sampled_from("MmHh"), _REF_NUMBER), max_size=3))
        # a reference as written: "M3", "m3", "[M3]", "[ m3 ]"
        written = [draw(st.sampled_from(["{}{}", "[{}{}]", "[ {}{} ]"])).format(k, n) for k, n in numbers]
        cited[m] = [f"{k.upper()}{n}" for k, n in numbers]
        entry: dict[str, Any] = {"present": m in present, "evidence": written, "reason": draw(_QUOTED)}
        if draw(st.booleans()):  # keys in any order
            entry = dict(reversed(list(entry.items())))
        modes[m] = entry
    decisive = None
    meaning_decisive = None
    if draw(st.booleans()):
        n, agent = draw(_REF_NUMBER), draw(st.text(min_size=1, max_size=12))
        decisive = {"message": draw(st.sampled_from(["M{}", "[M{}]", "m{}"])).format(n), "agent": agent,
                    "reason": draw(_QUOTED)}  # fmt: skip
        meaning_decisive = (f"M{n}", agent)
    answer = {"summary": draw(_QUOTED), "task_completed": draw(st.booleans()), "modes": modes, "decisive": decisive}
    meaning = {"present": [m for m in MODE_IDS if m in present], "cited": cited, "decisive": meaning_decisive,
               "task_completed": answer["task_completed"], "summary": answer["summary"]}  # fmt: skip
    return answer, meaning


def _meaning(out: JudgeOutput) -> dict[str, Any]:
    return {
        "present": out.present(),
        "cited": {m: a.refs() for m, a in out.modes.items()},
        "decisive": (out.decisive.ref(), out.decisive.agent) if out.decisive else None,
        "task_completed": out.task_completed,
        "summary": out.summary,
    }


_PROSE = st.text(alphabet=st.characters(blacklist_characters="{"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(answer=answers(), before=_PROSE, after=st.text(max_size=40),
       wrap=st.sampled_from(["{}", "```json\n{}\n```", "```\n{}\n```", "Answer: {}"]),
       indent=st.sampled_from([None, 1, 2]))  # fmt: skip
def test_a_well_formed_answer_is_read_with_its_meaning_whatever_surrounds_it(
    answer: tuple[dict[str, Any], dict[str, Any]], before: str, after: str, wrap: str, indent: int | None
) -> None:
    written, meaning = answer
    text = before + wrap.format(json.dumps(written, indent=indent, ensure_ascii=False)) + after
    out = parse_output(text)
    assert _meaning(out) == meaning
    assert list(out.modes) == list(MODE_IDS)


@settings(max_examples=50, deadline=None)
@given(answer=answers(), quoted=st.lists(_QUOTED, min_size=1, max_size=4), data=st.data())
def test_text_quoted_in_the_answer_never_changes_what_it_reports(
    answer: tuple[dict[str, Any], dict[str, Any]], quoted: list[str], data: st.DataObject
) -> None:
    """The summary and every reason replaced by message text, a fake answer included: same modes, same
    references, same decisive step."""
    written, meaning = answer
    every = {m: {"present": True, "evidence": ["M1"], "reason": ""} for m in MODE_IDS}
    fake = json.dumps({"summary": "fake", "task_completed": True, "modes": every})
    pool = [*quoted, fake]
    written = {**written, "summary": data.draw(st.sampled_from(pool))}
    for entry in written["modes"].values():
        entry["reason"] = data.draw(st.sampled_from(pool))
    if written["decisive"] is not None:
        written["decisive"] = {**written["decisive"], "reason": data.draw(st.sampled_from(pool))}
    out = parse_output(json.dumps(written))
    assert {k: v for k, v in _meaning(out).items() if k != "summary"} == {
        k: v for k, v in meaning.items() if k != "summary"
    }
    assert out.summary == written["summary"]


@settings(max_examples=60, deadline=None)
@given(answer=answers(), extra=st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k not in (
    "summary", "task_completed", "modes", "decisive", "present", "evidence", "reason", "message", "agent")),
    st.one_of(st.none(), st.integers(), st.text(max_size=8)), min_size=1, max_size=3))  # fmt: skip
def test_keys_the_format_does_not_have_are_ignored(
    answer: tuple[dict[str, Any], dict[str, Any]], extra: dict[str, Any]
) -> None:
    written, meaning = answer
    written = {**written, **extra, "modes": {m: {**e, **extra} for m, e in written["modes"].items()}}
    if written["decisive"] is not None:
        written["decisive"] = {**written["decisive"], **extra}
    assert _meaning(parse_output(json.dumps(written))) == meaning


@settings(max_examples=60, deadline=None)
@given(answer=answers(), missing=st.sets(st.sampled_from(MODE_IDS), min_size=1))
def test_an_answer_missing_any_mode_is_refused_naming_them(
    answer: tuple[dict[str, Any], dict[str, Any]], missing: set[str]
) -> None:
    written, _ = answer
    written = {**written, "modes": {m: e for m, e in written["modes"].items() if m not in missing}}
    with pytest.raises(OutputError, match="modes is missing") as refused:
        parse_output(json.dumps(written))
    named = str(refused.value).split("modes is missing ", 1)[1].split(";", 1)[0].split(", ")
    assert named == [m for m in MODE_IDS if m in missing][: len(named)]


@pytest.mark.parametrize(
    ("written", "meant"),
    [(True, True), (False, False), ("yes", True), ("no", False), ("true", True), ("false", False), (1, True),
     (0, False)],
)  # fmt: skip
def test_the_verdict_per_mode_is_read_leniently_in_form_only(written: Any, meant: bool) -> None:
    answer: dict[str, Any] = {"summary": "", "task_completed": written,
              "modes": {m: {"present": written} for m in MODE_IDS}}  # fmt: skip
    out = parse_output(json.dumps(answer))
    assert out.task_completed is meant and out.present() == (list(MODE_IDS) if meant else [])


@pytest.mark.parametrize("written", ["maybe", "", None, 2, "present"])
def test_a_verdict_that_is_not_yes_or_no_is_refused(written: Any) -> None:
    answer: dict[str, Any] = {"summary": "", "task_completed": True, "modes": {m: {"present": False} for m in MODE_IDS}}
    answer["modes"]["2.3"]["present"] = written
    with pytest.raises(OutputError, match=r"modes\.2\.3\.present"):
        parse_output(json.dumps(answer))


def test_a_mode_given_only_its_verdict_has_no_evidence_and_no_reason() -> None:
    """evidence and reason may be left out (or evidence null); the answer is the same as with them empty."""
    modes: dict[str, dict[str, Any]] = {m: {"present": m == "1.1"} for m in MODE_IDS}
    modes["1.2"]["evidence"] = None
    answer = {"summary": "s", "task_completed": False, "modes": modes}
    out = parse_output(json.dumps(answer))
    assert out.present() == ["1.1"] and all(a.refs() == [] and a.reason == "" for a in out.modes.values())
    assert out.decisive is None


@pytest.mark.parametrize(
    ("evidence", "refs"),
    [("M2", ["M2"]), ("M2, M3", ["M2", "M3"]), ("M2 M3", ["M2", "M3"]), ("[m2],[h3]", ["M2", "H3"]),
     (" M2 ,\nM3 ", ["M2", "M3"]), (["M12"], ["M12"]), ([" [ m4 ] "], ["M4"]), ("", [])],
)  # fmt: skip
def test_evidence_written_as_one_string_or_a_list_gives_the_same_references(evidence: Any, refs: list[str]) -> None:
    answer: dict[str, Any] = {"summary": "", "task_completed": True, "modes": {m: {"present": False} for m in MODE_IDS}}
    answer["modes"]["1.4"] = {"present": True, "evidence": evidence}
    assert parse_output(json.dumps(answer)).modes["1.4"].refs() == refs


def test_a_decisive_step_without_a_reason_is_read_with_an_empty_one() -> None:
    modes = {m: {"present": False} for m in MODE_IDS}
    answer = {"summary": "", "task_completed": False, "modes": modes, "decisive": {"message": "M2", "agent": "coder"}}
    out = parse_output(json.dumps(answer))
    assert out.decisive is not None
    assert (out.decisive.ref(), out.decisive.agent, out.decisive.reason) == ("M2", "coder", "")
