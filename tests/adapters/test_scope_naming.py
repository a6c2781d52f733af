"""The framework is named from the instrumentation's scope by one rule, whatever convention wrote the spans: the
instrumentation prefixes stripped, the first dotted part that does not name a convention is the library."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: this property runs in the main tier")
from hypothesis import given
from hypothesis import strategies as st

from mast_otel.adapters._evidence import scope_framework

# a library's module name: lower-case words joined by underscores, none of them a convention's name
_LIBRARY = st.from_regex(r"[a-z][a-z0-9]{1,8}(_[a-z][a-z0-9]{1,8}){0,2}", fullmatch=True).filter(
    lambda name: name not in {"genai", "gen_ai"}
)


@given(_LIBRARY, st.sampled_from(["", ".instrumentation", ".v1"]))
def test_every_instrumentation_family_names_the_same_library(library: str, tail: str) -> None:
    named = {
        scope_framework(f"{family}{library}{tail}")
        for family in ("opentelemetry.instrumentation.genai.", "openinference.instrumentation.",
                       "opentelemetry.instrumentation.", "")
    }  # fmt: skip
    assert len(named) == 1
    (name,) = named
    assert name in (library.replace("_", "-"), None)  # None: a model client's instrumentation


def test_the_official_genai_instrumentations_name_their_library_never_genai() -> None:
    assert scope_framework("opentelemetry.instrumentation.genai.openai_agents") == "openai-agents"
    assert scope_framework("opentelemetry.instrumentation.genai.llama_index") == "llama-index"
    assert scope_framework("opentelemetry.instrumentation.genai.openai") is None  # the model client's
    assert scope_framework("gen_ai") is None  # a convention's tracer names nobody
    assert scope_framework("genai") is None
