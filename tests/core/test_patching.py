"""The one patch-and-undo mechanism (mast_otel/integrations/patching.py) and the registry around it: raw
attributes come back as the very objects they were, a missing hook patches nothing, and nothing raises into the
program."""

from __future__ import annotations

import abc
import logging
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
import wrapt

import mast_otel
from mast_otel._safety import recording_failures, reset_recording_failures
from mast_otel.integrations.patching import Hook, Patches


def _passthrough(_context: Any) -> Any:
    def wrapper(wrapped: Any, _instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return wrapped(*args, **kwargs)

    return wrapper


class Base:
    def inherited(self) -> str:
        return "base"


class Owner(Base):
    @staticmethod
    def static() -> str:
        return "static"

    @classmethod
    def klass(cls) -> str:
        return cls.__name__

    def method(self) -> str:
        return "method"

    @property
    def prop(self) -> str:
        return "prop"


def function() -> str:
    return "function"


class Declared(abc.ABC):
    @abc.abstractmethod
    def run(self) -> str: ...


@pytest.fixture
def fake_framework() -> Iterator[str]:
    module = types.ModuleType("fake_framework_for_patching")
    module.Owner = Owner  # type: ignore[attr-defined]
    module.function = function  # type: ignore[attr-defined]
    module.Declared = Declared  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    reset_recording_failures()
    yield module.__name__
    del sys.modules[module.__name__]
    reset_recording_failures()


PATHS = ("Owner.static", "Owner.klass", "Owner.method", "Owner.inherited", "function")


def test_undo_puts_back_the_very_objects(fake_framework: str) -> None:
    module = sys.modules[fake_framework]
    before = {p: vars(Owner).get(p.split(".")[-1], "absent") for p in PATHS[:-1]}
    patches = Patches("fake")
    assert patches.apply([Hook(fake_framework, p, _passthrough) for p in PATHS], None)
    assert all(isinstance(vars(Owner)[p.split(".")[-1]], wrapt.FunctionWrapper) for p in PATHS[:-1])
    assert (Owner.static(), Owner.klass(), Owner().method(), Owner().inherited(), module.function()) == (
        "static", "Owner", "method", "base", "function")  # fmt: skip
    patches.undo()
    assert {p: vars(Owner).get(p.split(".")[-1], "absent") for p in PATHS[:-1]} == before
    assert all(vars(Owner).get(p.split(".")[-1], "absent") is before[p] for p in PATHS[:-1])
    assert isinstance(vars(Owner)["static"], staticmethod), "a staticmethod stays a staticmethod"
    assert "inherited" not in vars(Owner), "an inherited method is not copied onto the subclass"
    assert module.function is function
    assert recording_failures() == {}


@pytest.mark.parametrize(
    "missing",
    ["Owner.renamed", "Gone.method", "Owner.prop", "function.attr", "renamed", "Owner.__init__", "Declared.run"],
)
def test_a_missing_or_misshapen_hook_patches_nothing(
    fake_framework: str, missing: str, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = [Hook(fake_framework, p, _passthrough) for p in PATHS] + [Hook(fake_framework, missing, _passthrough)]
    before = dict(vars(Owner))
    patches = Patches("fake", "pytest")
    with caplog.at_level(logging.WARNING, logger="mast_otel"):
        assert not patches.apply(hooks, None)
        assert not Patches("fake", "pytest").apply(hooks, None)
    assert dict(vars(Owner)) == before
    assert recording_failures() == {"fake.hook": 2}
    (logged,) = [r.getMessage() for r in caplog.records]
    assert f"hook {fake_framework}.{missing} of pytest {pytest.__version__}" in logged


def test_a_wrapper_factory_that_raises_takes_back_what_was_patched(fake_framework: str) -> None:
    def broken(_context: Any) -> Any:
        raise RuntimeError("no wrapper")

    before = dict(vars(Owner))
    assert not Patches("fake").apply([Hook(fake_framework, "Owner.method", _passthrough),
                                      Hook(fake_framework, "Owner.static", broken)], None)  # fmt: skip
    assert dict(vars(Owner)) == before
    assert recording_failures() == {"fake.hook": 1}


def test_no_patch_after_undo(fake_framework: str) -> None:
    patches = Patches("fake")
    patches.undo()
    patches.patch(Owner, "method", _passthrough(None))
    assert not isinstance(vars(Owner)["method"], wrapt.FunctionWrapper), "a patch racing uninstrument() is not made"


def test_an_integration_that_raises_while_instrumenting_is_undone_and_counted(
    monkeypatch: pytest.MonkeyPatch, tracer_provider: Any
) -> None:
    from autogen import ConversableAgent

    from mast_otel.integrations.ag2 import AG2Instrumentor

    original = vars(ConversableAgent)["send"]
    real = AG2Instrumentor._instrument

    def half_then_raise(self: Any, **kwargs: Any) -> None:
        real(self, **kwargs)
        raise RuntimeError("an unexpected failure half-way")

    monkeypatch.setattr(AG2Instrumentor, "_instrument", half_then_raise)
    reset_recording_failures()
    mast_otel.instrument(tracer_provider=tracer_provider, frameworks=["ag2"])
    try:
        assert vars(ConversableAgent)["send"] is original, "what was patched before the failure is undone"
        assert recording_failures() == {"ag2.instrument": 1}
    finally:
        mast_otel.uninstrument()
        reset_recording_failures()


def test_an_optional_hook_that_is_absent_is_skipped_and_not_counted(fake_framework: str) -> None:
    patches = Patches("fake")
    hooks = [Hook(fake_framework, "Owner.method", _passthrough),
             Hook(fake_framework, "Owner.not_in_this_release", _passthrough, optional=True)]  # fmt: skip
    assert patches.apply(hooks, None)
    assert isinstance(vars(Owner)["method"], wrapt.FunctionWrapper)
    assert recording_failures() == {}
    patches.undo()
