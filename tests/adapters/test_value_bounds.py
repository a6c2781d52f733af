"""A value too deep or too large spoils only itself: the conversation is the one read without that attribute, the
result names it (``ignored``), and nothing raises. Checked on every recorded run of every adapter with any one
attribute (of a span or of one of its events) replaced by JSON nested 100,000 deep, a string of 4 Mi + 1
characters, and the like; then the bounds themselves: the depth the scan finds is JSON's own, brackets inside
strings not counted."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

# The adapters' framework sessions (nox -s adapters_*) run tests/adapters without the dev extra; these properties
# read recorded runs only, and run in the main environment.
pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel import semconv as sc
from mast_otel.adapters import (
    MAX_VALUE_CHARS,
    MAX_VALUE_DEPTH,
    TOO_DEEP,
    TOO_LARGE,
    Adapted,
    Ignored,
    NotAConversation,
    adapt,
    foreign_units,
    json_of,
    screen,
)
from mast_otel.adapters._bounds import why_ignored
from mast_otel.spans import SpanEvent, SpanRecord, from_otlp_json
from tests.adapters._fixtures import DATA

CAPTURES = DATA.parent / "captures"
RUNS = [*sorted(DATA.glob("*.json")), *sorted((DATA.parent / "genai").glob("*.json")),
        *sorted(p for p in CAPTURES.glob("*/*.json") if p.stem != "solo")]  # fmt: skip

_DEEP = "[" * 100_000 + "]" * 100_000


@functools.cache
def _pathological() -> dict[str, tuple[Any, str]]:
    """Values past the bounds (built once: some are megabytes), each with the reason it is left out."""
    n = MAX_VALUE_DEPTH + 1
    nested: Any = "x"
    for _ in range(n + 1):
        nested = (nested,)
    message = '[{"role": "user", "parts": [{"type": "text", "content": "hi", "more": %s}]}]'
    return {
        "array nested 100,000 deep": (_DEEP, TOO_DEEP),
        "object nested 100,000 deep": ('{"a":' * 100_000 + "1" + "}" * 100_000, TOO_DEEP),
        "one level too deep": ("[" * n + "]" * n, TOO_DEEP),
        "a message nesting too deep": (message % ("[" * n + "]" * n), TOO_DEEP),
        "never closed, after blanks": (" \n\t" + "{" * 100_000, TOO_DEEP),
        "4 Mi + 1 characters": ("x" * (MAX_VALUE_CHARS + 1), TOO_LARGE),
        "a message of 4 Mi characters": (message % json.dumps("y" * MAX_VALUE_CHARS), TOO_LARGE),
        "a list nested too deep": (nested, TOO_DEEP),
        "a list of 4 Mi + 1 items": (("",) * (MAX_VALUE_CHARS + 1), TOO_LARGE),
        "a map holding a deep text": ({"body": _DEEP}, TOO_DEEP),
    }


@functools.cache
def _load(path: Path) -> tuple[SpanRecord, ...]:
    return tuple(from_otlp_json(json.dumps(json.loads(path.read_text(encoding="utf-8"))["otlp"])))


Place = tuple[int, int | None, str]  # (span index, event index or None: the span's own attributes, key)


def _places(spans: Sequence[SpanRecord]) -> list[Place]:
    out: list[Place] = [(i, None, key) for i, s in enumerate(spans) for key in s.attributes]
    out += [(i, j, key) for i, s in enumerate(spans) for j, e in enumerate(s.events) for key in e.attributes]
    return out


def _with(spans: Sequence[SpanRecord], place: Place, value: Any) -> list[SpanRecord]:
    """``spans`` with the attribute at ``place`` set to ``value`` (None: left out)."""
    i, j, key = place

    def changed(attributes: Any) -> dict[str, Any]:
        out = {k: v for k, v in attributes.items() if k != key}
        return out if value is None else {**out, key: value}

    out = list(spans)
    span = out[i]
    if j is None:
        out[i] = dataclasses.replace(span, attributes=changed(span.attributes))
    else:
        events = list(span.events)
        events[j] = SpanEvent(events[j].name, changed(events[j].attributes))
        out[i] = dataclasses.replace(span, events=tuple(events))
    return out


def _read(spans: Sequence[SpanRecord], units: list[set[str]]) -> list[Adapted | NotAConversation | None]:
    by_id = {s.span_id: s for s in spans}
    return [adapt([by_id[span_id] for span_id in unit]) for unit in units]


def _without_ignored(found: Adapted | NotAConversation | None) -> Adapted | NotAConversation | None:
    return found if found is None else dataclasses.replace(found, ignored=())


@pytest.mark.parametrize("path", RUNS, ids=[f"{p.parent.name}/{p.stem}" for p in RUNS])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_one_value_past_the_bounds_is_read_as_absent_and_named(path: Path, data: st.DataObject) -> None:
    """Any one attribute replaced by a pathological value: every conversation in the run is the one read without
    that attribute, the one that held it names it in ``ignored``, and nothing raises (``foreign_units`` neither)."""
    spans = _load(path)
    place = data.draw(st.sampled_from(_places(spans)), label="place")
    name = data.draw(st.sampled_from(sorted(_pathological())), label="value")
    value, reason = _pathological()[name]
    bad, without = _with(spans, place, value), _with(spans, place, None)
    foreign_units(bad)  # (reads answers for evidence: raises nothing either)
    units = [{s.span_id for s in unit} for unit in foreign_units(without)]
    got, expected = _read(bad, units), _read(without, units)
    assert [_without_ignored(g) for g in got] == expected
    span_id = spans[place[0]].span_id
    event = None if place[1] is None else spans[place[0]].events[place[1]].name
    for unit, found in zip(units, got, strict=True):
        named = found.ignored if found is not None else ()
        assert named == ((Ignored(span_id, place[2], reason, event),) if span_id in unit and found else ())


def _run(path: Path) -> list[SpanRecord]:
    return list(_load(path))


def _named(spans: Sequence[SpanRecord], key: str) -> int:
    """The first span holding ``key``."""
    return next(i for i, s in enumerate(spans) if key in s.attributes)


@pytest.mark.parametrize(
    ("run", "key"),
    [
        ("genai/google_adk-content", sc.GEN_AI_INPUT_MESSAGES),  # GenAI's messages
        ("genai/pydantic_ai-default", sc.GEN_AI_OUTPUT_MESSAGES),
        ("genai/agent_framework-content", sc.GEN_AI_TOOL_CALL_ARGUMENTS),  # a tool's arguments
        ("adapters/openinference_ag2", sc.OI_INPUT_VALUE),  # OpenInference's input
        ("captures/vercel_ai/desk", "ai.prompt.messages"),  # the AI SDK's prompt
        ("adapters/openllmetry_langgraph", "traceloop.entity.input"),  # OpenLLMetry's input
        ("adapters/ag2_builtin", sc.GEN_AI_OUTPUT_MESSAGES),  # AG2's own tracing
    ],
)
def test_the_issues_value_in_each_convention(run: str, key: str) -> None:
    """JSON nested 100,000 deep in the attribute each convention keeps content in (it raised ``RecursionError``,
    and the run's verdict was ``error``): the conversation is the one without it, and the result names it."""
    spans = _run(DATA.parent / f"{run}.json")
    at = _named(spans, key)
    bad = _with(spans, (at, None, key), _DEEP)
    without = _with(spans, (at, None, key), None)
    got = [adapt(unit) for unit in foreign_units(bad)]
    expected = [adapt(unit) for unit in foreign_units(without)]
    assert [_without_ignored(g) for g in got] == expected
    assert any(isinstance(e, Adapted) for e in expected), "the run is a conversation without the value"
    named = [i for g in got if g is not None for i in g.ignored]
    assert named == [Ignored(spans[at].span_id, key, TOO_DEEP)]


def test_an_events_value_is_left_out_and_named_with_its_event() -> None:
    """Strands' messages as span events (``gen_ai.user.message`` / ``gen_ai.choice``, what a log record becomes):
    a deep one is left out, the rest of the event read."""
    spans = _run(DATA.parent / "genai" / "strands-default.json")
    at, j = next((i, j) for i, s in enumerate(spans) for j, e in enumerate(s.events) if e.name == "gen_ai.choice")
    key = "message"
    bad, without = _with(spans, (at, j, key), _DEEP), _with(spans, (at, j, key), None)
    (unit,) = foreign_units(without)
    ids = [s.span_id for s in unit]
    got, expected = _read(bad, [set(ids)]), _read(without, [set(ids)])
    assert isinstance(expected[0], Adapted)
    assert [_without_ignored(g) for g in got] == expected
    assert got[0] is not None and got[0].ignored == (Ignored(spans[at].span_id, key, TOO_DEEP, "gen_ai.choice"),)


def test_json_too_deep_inside_a_value_reads_as_no_json() -> None:
    """What the screen cannot see: a tool call's arguments given as JSON text inside a model's answer (CrewAI under
    OpenLLMetry: no tool spans, so the answers' calls are the tool calls). Nested past the bounds, they read as
    arguments that are no JSON: the same conversation as with arguments ``not json``, nothing left out."""
    spans = _run(CAPTURES / "crewai_openllmetry" / "hierarchical.json")
    key = sc.GEN_AI_OUTPUT_MESSAGES
    at = next(i for i, s in enumerate(spans) if "delegate_work_to_coworker" in str(s.attributes.get(key)))

    def answer(arguments: str) -> str:
        messages = json.loads(spans[at].attributes[key])
        for part in (p for m in messages for p in m["parts"] if p.get("name") == "delegate_work_to_coworker"):
            part["arguments"] = arguments
        return json.dumps(messages)

    got = [adapt(u) for u in foreign_units(_with(spans, (at, None, key), answer(_DEEP)))]
    plain = [adapt(u) for u in foreign_units(_with(spans, (at, None, key), answer("not json")))]
    assert any(isinstance(p, Adapted) for p in plain)
    assert all(g is None or g.ignored == () for g in got)
    assert [_masked(g) for g in got] == [_masked(p) for p in plain]


def _masked(found: Adapted | NotAConversation | None) -> Any:
    """A result with the tool calls' argument text left out (the two runs differ only there)."""
    if not isinstance(found, Adapted):
        return found
    return [{k: v for k, v in r.attributes.items() if k != sc.GEN_AI_TOOL_CALL_ARGUMENTS} for r in found.records]


# -- the bounds themselves --------------------------------------------------------------------------------------
def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


_TRICKY = st.text(st.sampled_from('[]{}"\\ab,: \n'), max_size=12)  # strings full of brackets, quotes, escapes
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), _TRICKY)
_JSON = st.recursive(_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
                     max_leaves=8)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_JSON, st.integers(min_value=0, max_value=MAX_VALUE_DEPTH + 5), st.booleans(), st.sampled_from(["", " ", "\n"]))
def test_the_depth_found_is_jsons_own(inner: Any, levels: int, as_object: bool, blank: str) -> None:
    """Any JSON (strings full of brackets, quotes and escapes) wrapped ``levels`` deep: too deep exactly when its
    depth exceeds the bound, and otherwise read as ``json.loads`` reads it."""
    value = inner
    for _ in range(levels):
        value = {"k": value} if as_object else [value]
    text = blank + json.dumps(value)
    too_deep = _depth(value) > MAX_VALUE_DEPTH
    assert why_ignored(text) == (TOO_DEEP if too_deep else None)
    assert json_of(text, "none") == ("none" if too_deep else value)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0, MAX_VALUE_DEPTH, 100_000]), st.text(st.sampled_from('[]{}"\\a, '), max_size=400))
def test_json_of_never_raises(opened: int, text: str) -> None:
    """Any text, JSON or not, well formed or not, after any number of open brackets: a value or the default."""
    found = json_of("[" * opened + text, "default")
    assert found == "default" or (isinstance(found, list) if opened else True)


def test_the_size_bound_is_inclusive() -> None:
    assert why_ignored("x" * MAX_VALUE_CHARS) is None
    assert why_ignored("x" * (MAX_VALUE_CHARS + 1)) == TOO_LARGE
    assert why_ignored(("x" * (MAX_VALUE_CHARS // 2), "y" * (MAX_VALUE_CHARS // 2))) == TOO_LARGE  # items count too


def test_screen_keeps_spans_with_nothing_to_leave_out() -> None:
    """The spans within the bounds are the very objects given (no copy of a conversation for nothing)."""
    spans = _run(DATA / "openinference_ag2.json")
    screened = screen(spans)
    assert screened.ignored == () and all(a is b for a, b in zip(screened.spans, spans, strict=True))
