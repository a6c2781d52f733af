"""mast-otel draws nothing from the program's randomness (``mast_otel._ids``).

A program that seeds ``random`` and fixes ``uuid.uuid4``'s sequence gets the same run record and the same next
values with mast-otel on as without: on a provider the program passes in (the SDK's default id generator, which
draws from ``random``) and after a bare ``instrument()`` (mast-otel's own provider, also while its exports fail and
are retried), for the recorder API and every integration whose framework this environment has
(tests/program_randomness.py; this module also runs in the LangGraph, autogen-agentchat, OpenAI Agents, AG2 1.x,
CrewAI and MetaGPT sessions).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from mast_otel import Recorder
from tests.frameworks import REPO
from tests.program_randomness import SCENARIOS, available, instrumentor, observe, observe_warm

SCENARIO_NAMES = available()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_the_programs_provider(name: str, tracer_provider: TracerProvider, span_exporter: Any) -> None:
    """The program's own provider keeps the SDK's default generator; mast-otel's spans on it draw nothing."""
    scenario = SCENARIOS[name]
    plain = observe_warm(scenario.run)
    if scenario.instrumentor:
        switch = instrumentor(name)
        switch.instrument(tracer_provider=tracer_provider)
        try:
            instrumented = observe(scenario.run)
        finally:
            switch.uninstrument()
    else:
        instrumented = observe(scenario.run, Recorder(tracer_provider=tracer_provider, framework="randomness"))
    assert span_exporter.get_finished_spans(), "the instrumented run recorded nothing: the comparison proves nothing"
    assert instrumented == plain


def _in_a_fresh_process(*args: str, **env: str) -> dict[str, Any]:
    """``tests.program_randomness ARGS`` in a new interpreter: what it saw, checked to have recorded something."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **env}
    done = subprocess.run([sys.executable, "-m", "tests.program_randomness", *args], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["spans"] > 0, "the instrumented run recorded nothing: the comparison proves nothing"
    return seen


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_bare_instrument(name: str) -> None:
    """After a bare ``instrument()`` mast-otel's own provider is in use: run in a fresh process."""
    # no export attempt mid-run: there is no collector to export to
    seen = _in_a_fresh_process(name, OTEL_BSP_SCHEDULE_DELAY="600000")
    assert seen["instrumented"] == seen["plain"]


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_bare_instrument_while_exports_fail(name: str, protocol: str) -> None:
    """The program fixes its streams after ``import mast_otel`` and before ``instrument()``, and its spans meet a
    collector that answers "unavailable": ``instrument()`` itself (resource, exporter imports) and the exporter's
    retries (back-off jitter) draw none of the program's values."""
    seen = _in_a_fresh_process(name, protocol)
    assert seen["attempts"] >= 3, "the exports were not retried: the comparison proves nothing"
    assert seen["instrumented"] == seen["plain"]


def test_the_comparison_sees_a_draw() -> None:
    """The oracle is sharp: one extra ``uuid.uuid4()`` (what mast-otel's conversation id used to be) shows."""
    import uuid

    def drawing(rec: Any) -> Any:
        uuid.uuid4()
        return SCENARIOS["recorder"].run(rec)

    assert observe(drawing) != observe(SCENARIOS["recorder"].run)


@pytest.mark.parametrize("detectors", [None, "process"])
def test_own_provider_resource_draws_no_uuid4(monkeypatch: pytest.MonkeyPatch, detectors: str | None) -> None:
    """The SDK's ``Resource.create()`` takes ``service.instance.id`` from ``uuid.uuid4()`` (once per process);
    the resource of mast-otel's own provider has the same keys and takes it from ``os.urandom``, also with the
    detectors a program names in ``OTEL_EXPERIMENTAL_RESOURCE_DETECTORS``."""
    import uuid
    from unittest import mock

    from opentelemetry.sdk import resources

    from mast_otel._setup import own_resource

    if detectors is not None:
        monkeypatch.setenv("OTEL_EXPERIMENTAL_RESOURCE_DETECTORS", detectors)
    monkeypatch.setattr(resources, "_service_instance_id", None)  # as in a process that made no resource yet
    drawn: list[uuid.UUID] = []

    def uuid4() -> uuid.UUID:
        drawn.append(uuid.UUID(int=len(drawn) + 1, version=4))
        return drawn[-1]

    with mock.patch("uuid.uuid4", side_effect=uuid4):
        ours = own_resource()
        assert drawn == []
        resources.Resource.create()
        assert len(drawn) == 1  # the oracle is sharp: the SDK's own resource does draw
    assert set(ours.attributes) == set(resources.Resource.create().attributes)
    assert ours.attributes[resources.SERVICE_INSTANCE_ID] != own_resource().attributes[resources.SERVICE_INSTANCE_ID]


def test_only_mast_otels_tracer_changes_and_a_chosen_generator_is_kept() -> None:
    """On the program's provider, mast-otel's tracer alone leaves the SDK's default generator; the program's own
    tracer keeps drawing from it, and a generator the program chose is mast-otel's too."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

    from mast_otel._ids import UrandomIdGenerator

    default = TracerProvider()
    assert isinstance(Recorder(tracer_provider=default).tracer.id_generator, UrandomIdGenerator)  # type: ignore[attr-defined]
    assert type(default.get_tracer("the-program").id_generator) is RandomIdGenerator  # type: ignore[attr-defined]
    assert type(default.id_generator) is RandomIdGenerator

    class Chosen(IdGenerator):
        def generate_span_id(self) -> int:
            return 7

        def generate_trace_id(self) -> int:
            return 11

    chosen = Chosen()
    assert Recorder(tracer_provider=TracerProvider(id_generator=chosen)).tracer.id_generator is chosen  # type: ignore[attr-defined]
