"""Recording never changes the program: failures inside the recorder or the shared lifecycle are counted, not raised.

The fault-injection tests break the layer under every recorder entry point (the tracer, the span, the redactor)
and the lifecycle's own hooks, then check that the program gets exactly its own results and exceptions and that
``mast_otel.recording_failures()`` counted each kind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import mast_otel
from mast_otel import Recorder
from mast_otel import semconv as sc
from mast_otel._safety import reset_recording_failures
from mast_otel.integrations.lifecycle import (
    Call,
    Params,
    Traced,
    async_iterator_wrapper,
    async_wrapper,
    iterator_wrapper,
    sync_wrapper,
)
from tests.span_query import Spans


@pytest.fixture(autouse=True)
def fresh_counts() -> Iterator[None]:
    reset_recording_failures()
    yield
    reset_recording_failures()


class Boom(Exception):
    pass


class Unprintable(Exception):
    """The program's own exception, whose ``str()`` raises (it happens: lazy messages, broken ``__repr__``)."""

    def __str__(self) -> str:
        raise RuntimeError("no text for you")


_FAILURE_TEXT = "content quoted by a failure: password=hunter22"


def _broken(*_: Any, **__: Any) -> Any:
    raise Boom(_FAILURE_TEXT)


def _program(rec: Recorder) -> list[Any]:
    """A home-grown MAS touching every entry point; returns what the program saw."""
    seen: list[Any] = []
    with rec.conversation("c", task="t", max_rounds=3) as conv:
        seen.append(type(conv).__name__)
        with rec.agent_turn("a") as turn:
            seen.append(rec.message("a", ["b"], "hello"))
            rec.broadcast_copy()
            seen.append(turn is None or turn.span is not None)
        rec.handoff("a", "b", candidates=["b"])
        h = rec.start_handoff("b")
        if h is not None:
            h.end("a")
        with rec.tool_call("t", arguments={"x": 1}) as call:
            if call is not None:
                call.set_result({"ok": True})
        rec.terminate(sc.TERMINATION_COMPLETED)
    return seen


@pytest.mark.parametrize(
    "target",
    ["tracer.start_span", "span.set_attributes", "span.end", "redactor.redact", "otel_context.attach"],
)
def test_every_entry_point_swallows_a_broken_layer(
    target: str, tracer_provider: TracerProvider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from opentelemetry.sdk.trace import Span as SdkSpan

    import mast_otel.recorder as recorder_module
    from mast_otel.redaction import Redactor

    rec = Recorder(tracer_provider=tracer_provider)
    if target == "tracer.start_span":
        monkeypatch.setattr(rec.tracer, "start_span", _broken)
    elif target == "span.set_attributes":
        monkeypatch.setattr(SdkSpan, "set_attributes", _broken)
    elif target == "span.end":
        monkeypatch.setattr(SdkSpan, "end", _broken)
    elif target == "redactor.redact":
        monkeypatch.setattr(Redactor, "redact", _broken)
    else:
        monkeypatch.setattr(recorder_module.otel_context, "attach", _broken)
    with caplog.at_level(logging.WARNING, logger="mast_otel"):
        _program(rec)
        _program(rec)
    failures = mast_otel.recording_failures()
    assert failures, "nothing was counted"
    # Logged once per kind, however often it happened.
    logged = [r for r in caplog.records if "recording failed" in r.getMessage()]
    assert len(logged) == len(failures)
    assert any(n >= 2 for n in failures.values())
    assert _FAILURE_TEXT not in caplog.text  # the exception's text may quote content: never logged


def test_program_exception_is_the_same_object_even_when_its_text_raises(
    tracer_provider: TracerProvider, span_exporter: Any
) -> None:
    rec = Recorder(tracer_provider=tracer_provider)
    raised = Unprintable()
    with pytest.raises(Unprintable) as caught, rec.conversation("c"), rec.agent_turn("a"):
        raise raised
    assert caught.value is raised
    assert caught.value.__context__ is None  # no exception of ours got chained onto it
    spans = Spans(span_exporter)
    assert spans.root.status.status_code.name == "ERROR"
    assert "str() raised" in str(spans.root.attributes[sc.TERMINATION_DETAIL])
    assert mast_otel.recording_failures() == {}


def _traced(**hooks: Any) -> Traced:
    return Traced("test.op", **hooks)


def work(a: int, b: int = 2, *, c: int = 3) -> tuple[int, int, int]:
    return a, b, c


@pytest.mark.parametrize("hook", ["begin", "finish", "fail", "inside"])
def test_lifecycle_hooks_that_raise_change_nothing(hook: str) -> None:
    hooks: dict[str, Any] = {"begin": lambda instance, call: "handle"}
    hooks[hook] = (lambda handle: _broken_cm()) if hook == "inside" else _broken
    wrapper = sync_wrapper(_traced(**hooks))
    assert wrapper(work, None, (1,), {"c": 5}) == (1, 2, 5)

    own = ValueError("the program's")

    def failing() -> None:
        raise own

    with pytest.raises(ValueError) as caught:
        wrapper(failing, None, (), {})
    assert caught.value is own and caught.value.__context__ is None
    counted = mast_otel.recording_failures()
    assert counted.get(f"test.op.{hook}", 0) >= 1, counted


class _BrokenCM:
    def __enter__(self) -> None:
        raise Boom("enter")

    def __exit__(self, *_: object) -> None:
        raise Boom("exit")


def _broken_cm() -> _BrokenCM:
    return _BrokenCM()


def test_async_lifecycle_passes_results_and_exceptions_through() -> None:
    wrapper = async_wrapper(_traced(begin=lambda i, c: "h", finish=_broken, fail=_broken))

    async def ok(x: int) -> int:
        return x * 2

    own = KeyError("k")

    async def bad() -> None:
        raise own

    async def main() -> None:
        assert await wrapper(ok, None, (21,), {}) == 42
        with pytest.raises(KeyError) as caught:
            await wrapper(bad, None, (), {})
        assert caught.value is own

    asyncio.run(main())
    assert mast_otel.recording_failures() == {"test.op.finish": 1, "test.op.fail": 1}


def test_arguments_are_read_by_name_whatever_their_position() -> None:
    def old(message: str, recipient: str, request_reply: bool | None = None) -> None: ...

    def reordered(recipient: str, message: str, *, request_reply: bool | None = True) -> None: ...

    for fn, args, kwargs in ((old, ("hi", "bob"), {}), (reordered, ("bob", "hi"), {})):
        call = Call(Params(fn), args, kwargs)
        assert (call.get("message"), call.get("recipient")) == ("hi", "bob")
    assert Call(Params(reordered), ("bob", "hi"), {}).get("request_reply") is True  # the signature's default
    assert Call(Params(old), (), {"recipient": "x"}).get("recipient") == "x"


def test_a_signature_without_a_read_parameter_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    began: list[Any] = []
    wrapper = sync_wrapper(_traced(begin=lambda i, c: began.append(c.get("recipient")), params=("recipient",)))

    def renamed(target: str) -> str:
        return target

    with caplog.at_level(logging.WARNING, logger="mast_otel"):
        assert wrapper(renamed, None, ("bob",), {}) == "bob"
        assert wrapper(renamed, None, ("eve",), {}) == "eve"
    assert began == []  # nothing recorded, rather than the wrong value
    assert len([r for r in caplog.records if "not recording test.op" in r.getMessage()]) == 1
    assert "has no parameter recipient" in caplog.text
    assert mast_otel.recording_failures() == {"test.op.signature": 1}


def test_arguments_are_read_through_a_decorator_without_wraps() -> None:
    """MetaGPT wraps ``Team.run`` in a ``wrapper(self, *args, **kwargs)`` that hides the real signature."""

    def passthrough(func: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            return func(self, *args, **kwargs)

        return wrapper

    class Team:
        @passthrough
        def run(self, n_round: int = 3, idea: str = "") -> tuple[int, str]:
            return n_round, idea

    bound = Team().run
    call = Call(Params(bound), (5,), {"idea": "x"})
    assert (call.get("n_round"), call.get("idea")) == (5, "x")
    assert Call(Params(bound), (), {}).get("n_round") == 3


def test_failures_are_also_an_opentelemetry_counter() -> None:
    """``mast_otel.recording.failures{kind}`` through the global MeterProvider (in a fresh process: it is global)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider

        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        from mast_otel import Recorder

        rec = Recorder(tracer_provider=TracerProvider())
        rec.tracer.start_span = None  # a recorder bug: every span start raises TypeError
        with rec.conversation("c"):
            pass
        with rec.conversation("c"):
            pass
        points = [
            (dict(p.attributes), p.value)
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == "mast_otel.recording.failures"
            for p in m.data.data_points
        ]
        print(points)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[({'kind': 'recorder.start_conversation'}, 2)]"


@pytest.mark.parametrize("hook", ["begin", "see", "finish", "fail", "inside"])
def test_stream_lifecycle_hooks_that_raise_change_nothing(hook: str) -> None:
    hooks: dict[str, Any] = {"begin": lambda instance, call: "handle"}
    hooks[hook] = (lambda handle: _broken_cm()) if hook == "inside" else _broken
    wrapper = iterator_wrapper(_traced(**hooks))
    assert list(wrapper(lambda n: iter(range(n)), None, (3,), {})) == [0, 1, 2]

    own = ValueError("the program's")

    def failing() -> Any:
        yield 1
        raise own

    stream = wrapper(failing, None, (), {})
    assert next(stream) == 1
    with pytest.raises(ValueError) as caught:
        next(stream)
    assert caught.value is own and caught.value.__context__ is None
    counted = mast_otel.recording_failures()
    assert counted.get(f"test.op.{hook}", 0) >= 1, counted


def test_async_stream_lifecycle_passes_items_and_exceptions_through() -> None:
    seen: list[Any] = []
    wrapper = async_iterator_wrapper(
        _traced(begin=lambda i, c: "h", see=lambda h, item: seen.append(item), finish=_broken, fail=_broken)
    )
    own = KeyError("k")

    async def items() -> Any:
        yield 1
        yield 2

    async def bad() -> Any:
        yield 1
        raise own

    async def main() -> None:
        assert [i async for i in wrapper(items, None, (), {})] == [1, 2]
        with pytest.raises(KeyError) as caught:
            async for _ in wrapper(bad, None, (), {}):
                pass
        assert caught.value is own

    asyncio.run(main())
    assert seen == [1, 2, 1]
    assert mast_otel.recording_failures() == {"test.op.finish": 1, "test.op.fail": 1}
