"""Faults every integration's fault-injection tests inject: every recorder entry point broken at once, and one
hooked framework target removed (a framework release that renamed it), before or after the framework's import."""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import context as otel_context
from wrapt import ObjectProxy

import mast_otel
from mast_otel import recorder
from mast_otel._safety import recording_failures, reset_recording_failures
from mast_otel.integrations.patching import Hook, HookMissing, hook_kind, resolve
from tests.frameworks import REPO

ENTRY_POINTS: tuple[tuple[type, str], ...] = (
    (recorder.Recorder, "start_conversation"),
    (recorder.Recorder, "set_task"),
    (recorder.Recorder, "end_conversation"),
    (recorder.Recorder, "terminate"),
    (recorder.Recorder, "event"),
    (recorder.Recorder, "broadcast_copy"),
    (recorder.Recorder, "start_agent_turn"),
    (recorder.Recorder, "message"),
    (recorder.Recorder, "start_handoff"),
    (recorder.Recorder, "handoff"),
    (recorder.Recorder, "start_tool_call"),
    (recorder.Recorder, "current"),
    (recorder.Conversation, "count_broadcast"),
    (recorder.AgentTurn, "end"),
    (recorder.AgentTurn, "fail"),
    (recorder.AgentTurn, "detach"),
    (recorder.Handoff, "end"),
    (recorder.Handoff, "fail"),
    (recorder.ToolCall, "set_arguments"),
    (recorder.ToolCall, "set_result"),
)


class InjectedFailure(RuntimeError):
    pass


def _raise(*_: Any, **__: Any) -> Any:
    raise InjectedFailure("injected recorder failure")


def break_recorder(monkeypatch: pytest.MonkeyPatch, spare: tuple[str, ...] = ()) -> None:
    """Every entry point (but those named in ``spare``) raises from now on (undone with the monkeypatch)."""
    for owner, name in ENTRY_POINTS:
        if name not in spare:
            monkeypatch.setattr(owner, name, _raise)


# Conversations still open, so every hook inside a run meets a recorder that raises (not only the run's begin).
INSIDE_A_RUN = ("start_conversation", "end_conversation", "current")


@contextmanager
def recorder_broken(spare: tuple[str, ...] = ()) -> Iterator[dict[str, int]]:
    """Inside the block every recorder entry point (but ``spare``) raises; the dict yielded is filled, on
    leaving, with the recording failures counted inside it (``{kind: count}``). Leaving checks the program's
    OpenTelemetry context is what it was."""
    failures: dict[str, int] = {}
    reset_recording_failures()
    before = otel_context.get_current()
    with pytest.MonkeyPatch.context() as monkeypatch:
        break_recorder(monkeypatch, spare)
        try:
            yield failures
        finally:
            failures.update(recording_failures())
            reset_recording_failures()
    # A hook that failed half-way must not leave a span of ours attached to the program's context.
    assert otel_context.get_current() == before, "a recording failure left mast-otel's context attached"


def assert_failures_only_from(failures: dict[str, int], framework: str) -> None:
    """Some recording failures were counted, each in ``framework``'s own hooks (``{framework}.<hook>``)."""
    assert failures and all(kind.startswith(f"{framework}.") for kind in failures), failures


# -- a hooked target gone (a framework release that renamed it) ---------------------------------------------------
_GONE = object()


def raw_targets(hooks: Sequence[Hook[Any]]) -> dict[str, Any]:
    """Each hook's raw attribute as its owner holds it (``_GONE`` when the owner or attribute is not there)."""
    found: dict[str, Any] = {}
    for hook in hooks:
        owner: Any = sys.modules.get(hook.module, _GONE)
        *owner_path, attr = hook.path.split(".")
        for part in owner_path:
            owner = getattr(owner, part, _GONE)
        found[hook.target] = _GONE if owner is _GONE else vars(owner).get(attr, _GONE)
    return found


def assert_same_objects(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Every attribute in ``got`` is the very object in ``want`` (identity, not equality); one whose module was not
    imported yet when ``want`` was taken is at least not left wrapped."""
    changed = [t for t in want if got[t] is not want[t] and (want[t] is not _GONE or isinstance(got[t], ObjectProxy))]
    assert not changed, f"not restored: {changed}"


@contextmanager
def target_removed(hook: Hook[Any]) -> Iterator[None]:
    """``hook``'s target deleted for the block, as a framework release that renamed it would have it. An inherited
    method (the owner does not define it) cannot be deleted from the owner alone: its owner class is removed
    from its module instead (a renamed class). Code that already holds the object keeps working either way."""
    owner, attr = resolve(hook.module, hook.path)
    if attr not in vars(owner):
        owner_path, _, attr = hook.path.rpartition(".")
        owner = importlib.import_module(hook.module)
        for part in owner_path.split(".")[:-1]:
            owner = getattr(owner, part)
        attr = owner_path.split(".")[-1]
    original = vars(owner)[attr]
    delattr(owner, attr)
    try:
        yield
    finally:
        setattr(owner, attr, original)


@dataclass(frozen=True)
class Outcome:
    """What a program gave: its result (or the type and text of its exception) and what it printed."""

    result: Any
    raised: tuple[str, str] | None
    printed: str


def outcome(program: Callable[[], Any]) -> Outcome:
    out = io.StringIO()
    with redirect_stdout(out):
        try:
            result = program()
        except Exception as exc:
            return Outcome(None, (type(exc).__qualname__, str(exc)), out.getvalue())
    return Outcome(result, None, out.getvalue())


def assert_hook_fault_harmless(
    hook: Hook[Any],
    hooks: Sequence[Hook[Any]],
    framework: str,
    program: Callable[[], Any],
    instrument: Callable[[], None],
    uninstrument: Callable[[], None],
) -> None:
    """With ``hook``'s target removed after the framework's import: ``instrument()`` returns, ``program`` gives what
    it gives without mast-otel (result, exception, output), ``uninstrument()`` leaves every hooked attribute the
    very object it was, and the missing hook is counted once under ``{framework}.hook`` (unless a base class
    still provides the method: then it is patched there like any inherited method, and nothing is missing)."""
    before = raw_targets(hooks)
    with target_removed(hook):
        removed = raw_targets(hooks)
        missing = expected_failures(hook, framework)
        expected = outcome(program)
        reset_recording_failures()
        try:
            instrument()
            got = outcome(program)
            failures = recording_failures()
        finally:
            uninstrument()
        assert_same_objects(raw_targets(hooks), removed)
    assert_same_objects(raw_targets(hooks), before)
    assert got == expected
    assert failures == missing, failures


def expected_failures(hook: Hook[Any], framework: str) -> dict[str, int]:
    """What instrumenting counts with ``hook``'s target removed: one ``{framework}.hook``, or nothing when a base
    class still provides the method or the hook is optional (not in every supported release)."""
    if hook.optional:
        return {}
    try:
        resolve(hook.module, hook.path)
    except HookMissing:
        return {hook_kind(framework): 1}
    return {}


_BEFORE_IMPORT = """
import json, sys
import wrapt
from opentelemetry.sdk.trace import TracerProvider
import mast_otel
from mast_otel.integrations.patching import Hook
from tests.fault_injection import assert_same_objects, expected_failures, outcome, raw_targets, target_removed

framework, top, hook_module, hook_path, program_name = sys.argv[1:6]
hooks_module, _, hooks_name = sys.argv[6].partition(":")
assert top not in sys.modules
removal = target_removed(Hook(hook_module, hook_path, lambda _: None))
seen = {}


def remove(_module):
    removal.__enter__()
    (hook,) = [h for h in seen["hooks"] if (h.module, h.path) == (hook_module, hook_path)]
    seen["missing"] = expected_failures(hook, framework)


def on_top(_module):
    table_module = __import__(hooks_module, fromlist=[hooks_name])
    seen["hooks"] = getattr(table_module, hooks_name)
    if hook_module == getattr(table_module, "LATER", None) and hook_module not in sys.modules:
        # patched by mast-otel when the program imports it, from a hook of its own registered after this one
        wrapt.register_post_import_hook(remove, hook_module)
    else:  # the framework's own package imported whole first, so removing a class cannot break its import
        __import__(hook_module)
        remove(None)
    seen["removed"] = raw_targets(seen["hooks"])


# Registered before mast-otel's own post-import hook, so it runs first: the target is gone when mast-otel looks.
wrapt.register_post_import_hook(on_top, top)
mast_otel.instrument(tracer_provider=TracerProvider(), frameworks=[framework])
__import__(top)  # mast-otel instruments here: nothing may come out of the import statement
module_name, _, function = program_name.partition(":")
program = getattr(__import__(module_name, fromlist=[function]), function)
got = outcome(program)
assert "missing" in seen, "the program imported the hook's module"
failures = mast_otel.recording_failures()
mast_otel.uninstrument()
assert_same_objects(raw_targets(seen["hooks"]), seen["removed"])
expected = outcome(program)
print(json.dumps({"same": got == expected, "raised": got.raised, "failures": failures, "missing": seen["missing"]}))
"""


def assert_hook_fault_harmless_before_import(
    hook: Hook[Any], framework: str, top_module: str, program: str, hooks: str, env: dict[str, str] | None = None
) -> None:
    """:func:`assert_hook_fault_harmless` for a framework imported after ``instrument()`` (a fresh interpreter):
    mast-otel then instruments from inside the program's ``import`` statement. ``program`` and ``hooks`` are
    ``"module:name"`` of a no-argument program and of the integration's hook table."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", _BEFORE_IMPORT, framework, top_module, hook.module, hook.path, program, hooks],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["same"], report
    assert report["failures"] == report["missing"], report


def hook_fault_tests(
    framework: str, top_module: str, program: str, hooks: str, *, fixtures: Sequence[str] = ()
) -> tuple[Callable[..., None], Callable[..., None]]:
    """One integration's fault tier: every hook of its table removed in turn after the framework's import, and
    before it the first, the last and those of a module patched later. Assign the pair to the two test names in
    the framework's test module::

        test_after_import, test_before_import = hook_fault_tests("ag2", "autogen", "tests.ag2.m:program",
                                                                 "mast_otel.integrations.ag2:HOOKS")

    ``program`` and ``hooks`` are ``"module:name"`` (the before-import half runs them in a fresh interpreter);
    ``fixtures`` names fixtures the after-import half needs besides ``tracer_provider``."""
    table = _named(hooks)

    @pytest.mark.parametrize("hook", table, ids=lambda hook: hook.target)
    def after_import(hook: Hook[Any], tracer_provider: Any) -> None:
        assert_hook_fault_harmless(
            hook, table, framework, _named(program), lambda: mast_otel.instrument(tracer_provider=tracer_provider),
            mast_otel.uninstrument,
        )  # fmt: skip

    if fixtures:  # an empty usefixtures() is a pytest warning
        after_import = pytest.mark.usefixtures(*fixtures)(after_import)

    # Before the import, mast-otel patches from its post-import hook on the framework's top module, applying the
    # same table through the same code as after it; what differs is the moment, not the hook. So the first and the
    # last hook of the table, and every hook of a module patched only when the program imports it later (``LATER``),
    # each in a fresh interpreter (the framework's import is most of a run's cost; the after-import half removes
    # every hook).
    later = getattr(importlib.import_module(hooks.partition(":")[0]), "LATER", None)
    before = list(dict.fromkeys([table[0], table[-1], *(hook for hook in table if hook.module == later)]))

    @pytest.mark.parametrize("hook", before, ids=lambda hook: hook.target)
    def before_import(hook: Hook[Any]) -> None:
        assert_hook_fault_harmless_before_import(hook, framework, top_module, program, hooks)

    return after_import, before_import


def _named(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)
