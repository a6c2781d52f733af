"""Instrumentor lifecycle: entry points, instrument/uninstrument, mast_otel.instrument(), overrides, no-ops."""

from __future__ import annotations

from typing import Any

import pytest

from tests.metagpt.conftest import SKIP_REASON
from tests.span_query import attr, parent_id, span_id

pytest.importorskip("metagpt", reason=SKIP_REASON)

import wrapt
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from mast_otel import semconv as sc
from mast_otel.integrations.metagpt import HOOKS, MetaGPTInstrumentor
from tests.fault_injection import assert_failures_only_from
from tests.lifecycle_checks import assert_entry_point_registered, exported_by_zero_code_run, never_sampled
from tests.metagpt.record import assert_matches_metagpt
from tests.metagpt.scenarios import IDEA, WriteCode, scripted_context, software_team


def _patched_methods() -> list[Any]:
    import importlib

    out = []
    for hook in HOOKS:
        owner, _, attr_name = hook.path.partition(".")
        out.append(vars(getattr(importlib.import_module(hook.module), owner))[attr_name])
    return out


def test_entrypoint_is_registered() -> None:
    assert_entry_point_registered("mast_metagpt", MetaGPTInstrumentor)


def test_instrumentation_dependencies_name_metagpt() -> None:
    assert list(MetaGPTInstrumentor().instrumentation_dependencies()) == ["metagpt >= 0.8, < 0.9"]


async def test_uninstrument_restores_every_method(tracer_provider: TracerProvider, script: Any, spans: Any) -> None:
    from metagpt.roles.engineer import Engineer

    assert not any(isinstance(m, wrapt.FunctionWrapper) for m in _patched_methods())
    inst = MetaGPTInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    assert all(isinstance(m, wrapt.FunctionWrapper) for m in _patched_methods())
    assert isinstance(vars(Engineer)["_act"], wrapt.FunctionWrapper), "an existing override is covered too"
    inst.uninstrument()
    assert not any(isinstance(m, wrapt.FunctionWrapper) for m in _patched_methods())
    assert not isinstance(vars(Engineer)["_act"], wrapt.FunctionWrapper)

    await software_team(scripted_context()).run(n_round=5, idea=IDEA)
    assert spans().all == []


async def test_mast_otel_instrument_covers_metagpt(tracer_provider: TracerProvider, script: Any, spans: Any) -> None:
    mast_otel.instrument(tracer_provider=tracer_provider)
    try:
        team = software_team(scripted_context())
        await team.run(n_round=5, idea=IDEA)
    finally:
        mast_otel.uninstrument()
    got = spans()
    assert_matches_metagpt(got, team.env)
    assert attr(got.root, sc.MAST_FRAMEWORK) == "metagpt"


async def test_override_defined_after_instrument_is_covered_once(instrumentor: Any, script: Any, spans: Any) -> None:
    from metagpt.roles import Role

    class CarefulCoder(Role):
        name: str = "Dave"
        profile: str = "CarefulCoder"

        async def _act(self) -> Any:  # an override calling super(): one turn, not two
            msg = await super()._act()
            msg.content = f"checked: {msg.content}"
            return msg

    context = scripted_context()
    team = software_team(context)
    dave = CarefulCoder(context=context)
    dave.set_actions([WriteCode])
    team.hire([dave])
    await team.run(n_round=5, idea=IDEA)

    got = spans()
    assert_matches_metagpt(got, team.env)
    (turn,) = [t for t in got.turns if attr(t, sc.GEN_AI_AGENT_NAME) == "Dave"]
    assert attr(turn, sc.TURN_ACTION) == "WriteCode"
    (message,) = [m for m in got.messages if attr(m, sc.MESSAGE_SENDER) == "Dave"]
    assert attr(message, sc.MESSAGE_CONTENT) == "checked: Dave output 1"
    assert parent_id(message) == span_id(turn)


async def test_not_recording_changes_nothing(script: Any) -> None:
    provider, exporter = never_sampled()
    inst = MetaGPTInstrumentor()
    inst.instrument(tracer_provider=provider)
    try:
        team = software_team(scripted_context())
        history = await team.run(n_round=5, idea=IDEA)
    finally:
        inst.uninstrument()
    assert exporter.get_finished_spans() == ()
    assert history == team.env.history and history.count("\n") == 4


async def test_suppressed_instrumentation_records_nothing(instrumentor: Any, script: Any, spans: Any) -> None:
    with suppress_instrumentation():
        history = await software_team(scripted_context()).run(n_round=5, idea=IDEA)
    assert spans().all == []
    assert history.count("\n") == 4


async def test_result_is_unchanged(tracer_provider: TracerProvider, script: Any) -> None:
    plain = await software_team(scripted_context()).run(n_round=5, idea=IDEA)
    script.calls.clear()
    inst = MetaGPTInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        traced = await software_team(scripted_context()).run(n_round=5, idea=IDEA)
    finally:
        inst.uninstrument()
    assert traced == plain


async def test_every_recorder_entry_point_raising_changes_nothing(
    tracer_provider: TracerProvider, script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mast_otel._safety import reset_recording_failures
    from tests.fault_injection import break_recorder

    def memories(team: Any) -> dict[str, list[tuple[str, str]]]:
        return {r.name: [(m.content, m.cause_by) for m in r.rc.memory.get()] for r in team.env.roles.values()}

    plain_team = software_team(scripted_context())
    plain = await plain_team.run(n_round=5, idea=IDEA)
    script.calls.clear()
    reset_recording_failures()
    inst = MetaGPTInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    break_recorder(monkeypatch)
    try:
        team = software_team(scripted_context())
        traced = await team.run(n_round=5, idea=IDEA)
    finally:
        monkeypatch.undo()
        inst.uninstrument()
    assert traced == plain
    assert memories(team) == memories(plain_team)
    assert_failures_only_from(mast_otel.recording_failures(), "metagpt")
    reset_recording_failures()


async def test_exception_propagates_unchanged(instrumentor: Any, script: Any, spans: Any) -> None:
    from metagpt.actions import UserRequirement
    from metagpt.schema import Message

    script.fail_for = "Alice"
    env = software_team(scripted_context()).env
    env.publish_message(Message(role="Human", content=IDEA, cause_by=UserRequirement))
    with pytest.raises(Exception) as raised:
        await env.run(k=3)
    # MetaGPT's role_raise_decorator re-raises a bare Exception carrying the traceback text: it reaches the
    # caller as MetaGPT made it
    assert type(raised.value) is Exception
    assert "scripted failure for Alice" in str(raised.value)
    root = spans().root
    assert attr(root, sc.TERMINATION_REASON) == sc.TERMINATION_ERROR
    assert attr(root, sc.ERROR_TYPE) == "ScriptFailure"


async def test_content_capture_off(tracer_provider: TracerProvider, script: Any, spans: Any) -> None:
    inst = MetaGPTInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, config=mast_otel.CaptureConfig(capture_content=False))
    try:
        await software_team(scripted_context()).run(n_round=5, idea=IDEA)
    finally:
        inst.uninstrument()
    got = spans()
    assert len(got.messages) == 4
    assert all(attr(m, sc.MESSAGE_CONTENT) is None for m in got.messages)
    assert attr(got.root, sc.CONVERSATION_TASK) is None
    assert attr(got.messages[1], sc.MESSAGE_SENDER) == "Alice"  # structure stays


def test_config_of_the_wrong_type_is_refused(tracer_provider: TracerProvider) -> None:
    with pytest.raises(TypeError, match="CaptureConfig"):
        MetaGPTInstrumentor().instrument(tracer_provider=tracer_provider, config={"capture_content": False})


def test_zero_code_opentelemetry_instrument_exports_otlp() -> None:
    """``opentelemetry-instrument python app.py``: the entry point instruments MetaGPT, spans reach a real receiver."""
    program = "import asyncio, examples.metagpt_team as app; asyncio.run(app.run())"  # no instrument() call in it
    received = exported_by_zero_code_run(program, "metagpt-zero-code")
    (root,) = [s for s in received if s.is_conversation_root]
    assert root.service_name == "metagpt-zero-code"
    assert root.get(sc.MAST_FRAMEWORK) == "metagpt"
    assert root.get(sc.TERMINATION_REASON) == sc.TERMINATION_MAX_ROUNDS
    messages = sorted(
        (s for s in received if s.span_type == sc.SPAN_TYPE_MESSAGE), key=lambda s: s.get(sc.MESSAGE_INDEX)
    )
    assert [s.get(sc.MESSAGE_SENDER) for s in messages][:4] == ["Human", "Alice", "Bob", "Carol"]
