"""Each framework has one spelling in ``mast.framework``, whether mast-otel instrumented it or read it from another
instrumentation: the package name normalized as package indexes compare names."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel import semconv as sc
from mast_otel.adapters._evidence import scope_framework
from mast_otel.recorder import Recorder

_WORDS = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), min_size=1, max_size=3)
_SEPARATOR = st.sampled_from(["-", "_", ".", "__", "-_", " "])


@given(_WORDS, _SEPARATOR, _SEPARATOR, st.booleans())
def test_every_spelling_of_one_package_name_is_one_framework(words: list[str], one: str, other: str,
                                                            upper: bool) -> None:  # fmt: skip
    first = one.join(words)
    second = other.join(w.upper() if upper else w for w in words)
    assert sc.framework_name(first) == sc.framework_name(second) == "-".join(words)
    assert sc.framework_name(sc.framework_name(first)) == sc.framework_name(first)


@given(_WORDS)
def test_a_framework_read_from_its_instrumentation_is_spelled_as_the_recorder_writes_it(words: list[str]) -> None:
    module = "_".join(words)  # the Python module an instrumentation is named after (autogen_agentchat)
    read = scope_framework(f"openinference.instrumentation.{module}")
    assert read is None or read == sc.framework_name(module)  # None: a model client's instrumentation


def test_the_recorder_writes_the_one_spelling() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with Recorder(tracer_provider=provider, framework="AutoGen_AgentChat").conversation("team"):
        pass
    (root,) = memory.get_finished_spans()
    assert root.attributes is not None and root.attributes[sc.MAST_FRAMEWORK] == "autogen-agentchat"
