"""One program, instrumented under many environments in one process: what ``instrument()`` does with each.

``python -m tests.instrument_environment`` reads a JSON list of environments (each ``{VARIABLE: value}``) on stdin.
``--recorder-only`` leaves the AG2 group chat out: under ``python -W error`` AG2's own import raises (a
DeprecationWarning of jsonschema's), with or without mast-otel.

It runs the program once without mast-otel (the baseline), then for each environment: sets exactly those
variables, calls the bare ``mast_otel.instrument()`` (mast-otel's own provider, built from that environment),
runs the program again, and records what came out; then ``uninstrument()`` and forgets the global provider, so the
next environment starts as a fresh process would. It prints one JSON line: a list of
``{"raised": ..., "same": ..., "exported": ..., "failures": ...}`` in the order given.

What is exported is read by a span processor added to the provider mast-otel installed: it sees every span the
OTLP exporter is handed. Endpoints are the test's to choose: they must be local (nothing here waits on a network).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

SECRET = "ACME-1234"


def program(frameworks: bool = True, provider: Any = None) -> Any:
    """A home-grown MAS on the recorder API (on ``provider``, else the global one) and, where AG2 Classic is
    installed (and ``frameworks``), an AG2 group chat; the secret is in a task, messages, a tool's result and an
    exception's message. Returns what the program sees."""
    import mast_otel

    seen: list[Any] = []
    rec = mast_otel.Recorder(provider, framework="home-grown")
    try:
        with rec.conversation("team", task=f"close ticket {SECRET}"):
            with rec.agent_turn("planner"):
                rec.message("planner", ["coder"], f"the key is {SECRET}")
            with rec.tool_call("lookup", arguments={"ticket": SECRET}) as call:
                if call is not None:
                    call.set_result(f"found {SECRET}")
            with rec.agent_turn("coder"):
                raise RuntimeError(f"cannot close {SECRET}")
    except RuntimeError as exc:
        seen.append(str(exc))
    if not frameworks:
        return seen
    try:
        from tests.ag2.scenarios import round_robin_group
    except ImportError:
        return seen
    replies = {"alice": [f"the account is {SECRET}", "done"], "bob": ["noted", "TERMINATE"]}
    user, manager, groupchat = round_robin_group(replies, max_round=4)
    user.initiate_chat(manager, message=f"look up {SECRET}")
    seen.append([(m.get("name"), m.get("content")) for m in groupchat.messages])
    return seen


def fresh_process() -> None:
    """Undo what ``instrument()`` left process-wide: its patches, the global provider, the failure counts."""
    from opentelemetry import trace
    from opentelemetry.util._once import Once

    import mast_otel
    from mast_otel._safety import reset_recording_failures

    mast_otel.uninstrument()
    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    reset_recording_failures()


def exported_text(exporter: Any) -> str:
    parts: list[str] = []
    for span in exporter.get_finished_spans():
        parts += [span.name, *(str(v) for v in (span.attributes or {}).values())]
        for event in span.events:
            parts += [str(v) for v in (event.attributes or {}).values()]
        parts.append(span.status.description or "")
    return "\n".join(parts)


def under(environment: dict[str, str], baseline: Any, base_environ: dict[str, str],
          frameworks: bool = True) -> dict[str, Any]:  # fmt: skip
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import mast_otel

    fresh_process()
    os.environ.clear()
    os.environ.update(base_environ)
    os.environ.update(environment)
    outcome: dict[str, Any] = {"raised": None, "same": None, "exported": "", "failures": {}}
    exporter = InMemorySpanExporter()
    try:
        mast_otel.instrument()
    except BaseException:
        outcome["raised"] = traceback.format_exc()
        return outcome
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        outcome["same"] = program(frameworks) == baseline
    except BaseException:
        outcome["raised"] = traceback.format_exc()
    outcome["exported"] = exported_text(exporter)
    outcome["failures"] = mast_otel.recording_failures()
    return outcome


def main() -> None:
    environments = json.loads(sys.stdin.read())
    base_environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MAST_OTEL_"))}
    os.environ.clear()
    os.environ.update(base_environ)
    frameworks = "--recorder-only" not in sys.argv[1:]
    baseline = program(frameworks)
    results = [under(environment, baseline, base_environ, frameworks) for environment in environments]
    print(json.dumps(results))
    sys.stdout.flush()
    os._exit(0)  # providers of the environments above may still be exporting to closed ports: do not wait


if __name__ == "__main__":
    main()
