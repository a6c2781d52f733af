"""What a judged conversation's release writes: its structural signals, labelled spans, a verdict span when no root
can carry the labels, and the tombstone with the stored verdict. Pure work on spans already read; no lock, no store.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from mast_otel import semconv as sc
from mast_otel.adapters import SpanMapping
from mast_otel.collector.assemble.assembler import Unit
from mast_otel.collector.encoding import field
from mast_otel.collector.metrics import CollectorMetrics
from mast_otel.collector.release.commit import Loaded, verdict_to_json
from mast_otel.collector.release.labeller import label_spans, verdict_span
from mast_otel.collector.store.api import OutRow, Tomb
from mast_otel.judge.foreign import EXTRA_FRAMEWORK, EXTRA_SOURCE, not_a_conversation, structural_signals
from mast_otel.judge.model import Verdict
from mast_otel.judge.signals import Signal
from mast_otel.spans import SpanRecord, any_value
from mast_otel.version import __version__

__all__ = ["COLLECTOR_SCOPE", "Release", "ReleaseBuilder", "compute_signals_of", "root_of"]

_log = logging.getLogger(__name__)
COLLECTOR_SCOPE = "mast_otel.collector"
SERVICE_VERSION = "service.version"


@dataclass(frozen=True, slots=True)
class Release:
    """Outbox rows (labelled spans not exported yet, and a verdict span if needed), the tombstone, and the names
    the verdict is counted under."""

    outbox: list[OutRow]
    tombs: tuple[Tomb, ...]  # one per trace of the unit (a run written as several traces has several)
    service: str | None
    framework: str | None
    signals: list[Signal]
    version: str | None = None  # service.version of the resource the conversation's root came with

    @property
    def size(self) -> int:
        """The bytes its outbox rows write."""
        return sum(len(row.data) for row in self.outbox)


class ReleaseBuilder:
    def __init__(
        self,
        *,
        judge_name: str,
        metrics: CollectorMetrics,
        clock: Callable[[], float],
        resource_of: Callable[[int], bytes] | None = None,
        mappings: Sequence[SpanMapping] = (),
    ) -> None:
        """``resource_of``: a stored resource id -> its OTLP Resource bytes (for ``service.version``);
        ``mappings``: the user's span mappings (the signals read a foreign conversation as the verdict does)."""
        self._mappings = mappings
        self._judge_name = judge_name
        self._metrics = metrics
        self._clock = clock
        self._resource_of = resource_of
        self._scope = InstrumentationScope(name=COLLECTOR_SCOPE, version=__version__).SerializeToString()

    def signals(self, trace_id: bytes, records: list[SpanRecord]) -> list[Signal]:
        """The conversation's structural signals; a detector bug costs the signals, never the release."""
        try:
            return compute_signals_of(records, self._mappings)
        except Exception:
            self._metrics.judge_errors.labels("signals").inc()
            _log.exception("structural signals failed on trace %s; released without them", trace_id.hex())
            return []

    def build(
        self, unit: Unit, submitted: float, verdict: Verdict, loaded: Loaded, records: list[SpanRecord]
    ) -> Release:
        signals = self.signals(unit.trace_id, records)
        now = self._clock()
        now_ns = int(now * 1e9)
        bodies = loaded.bodies()
        exported = loaded.exported()
        root = root_of(unit, records)
        service = root.service_name if root else next((r.service_name for r in records if r.service_name), None)
        found = (root.get(sc.MAST_FRAMEWORK) if root else None) or verdict.extra.get(EXTRA_FRAMEWORK)
        # (one spelling per framework in the series, whichever version of a recorder wrote the root)
        framework = sc.framework_name(found) if isinstance(found, str) else found
        root_here = root is not None and unit.root_id not in exported
        if not_a_conversation(verdict):  # never judged: the spans leave as they came, no verdict is stored
            tombs = tuple(Tomb(trace_id=t, span_ids=b"".join(ids), at=now) for t, ids in _per_trace(unit))
            return Release(loaded.outbox({}), tombs, service, framework, signals)
        version = self._version(unit, loaded)
        replace = label_spans(
            verdict,
            root_id=unit.root_id if root_here else None,
            bodies={sid: b for sid, b in bodies.items() if sid not in exported},
            judge_name=self._judge_name,
            now_ns=now_ns,
            signals=signals,
        )
        outbox = loaded.outbox(replace)
        # No root to carry the labels (partial, or already forwarded): a verdict span follows, in mast-otel's own
        # traces only; a trace another instrumentation wrote never gets a span it did not send (the verdict is in
        # the store and the metrics).
        if not root_here and loaded.groups and EXTRA_SOURCE not in verdict.extra:
            conv_id = (root.get(sc.GEN_AI_CONVERSATION_ID) if root else None) or next(iter(unit.conv_ids), None)
            body = verdict_span(
                verdict, trace_id=unit.trace_id, unit_key=unit.key, parent_id=unit.root_id or unit.parent_hint,
                conversation_id=conv_id, judge_name=self._judge_name, start_ns=int(submitted * 1e9),
                end_ns=now_ns, linkable=set(bodies), signals=signals,
            )  # fmt: skip
            group = next((g for g in loaded.groups if unit.root_id in dict(g.spans)), loaded.groups[0])
            outbox.append(OutRow(group.segment.resource, field(1, self._scope) + field(2, body), 1))
        if framework and EXTRA_FRAMEWORK not in verdict.extra:  # the stored verdict names it (`report --store`)
            verdict = dataclasses.replace(verdict, extra={**verdict.extra, EXTRA_FRAMEWORK: str(framework)})
        tombs = tuple(
            Tomb(trace_id=t, span_ids=b"".join(ids), at=now, unit=unit.key, conv_ids=",".join(unit.conv_ids),
                 verdict=verdict_to_json(verdict))
            for t, ids in _per_trace(unit)
        )  # fmt: skip
        return Release(outbox, tombs, service, framework, signals, version)

    def _version(self, unit: Unit, loaded: Loaded) -> str | None:
        """``service.version`` of the resource the root arrived with (else the conversation's first spans'); a
        resource that cannot be read costs the version, never the release."""
        if self._resource_of is None or not loaded.groups:
            return None
        group = next((g for g in loaded.groups if any(sid == unit.root_id for sid, _ in g.spans)), loaded.groups[0])
        try:
            attributes = Resource.FromString(self._resource_of(group.segment.resource)).attributes
        except Exception:
            _log.debug("no service.version for trace %s: its resource cannot be read", unit.trace_id.hex())
            return None
        version = None
        for kv in attributes:
            if kv.key == SERVICE_VERSION:
                version = any_value(kv.value)
        return str(version) if version not in (None, "") else None


def _per_trace(unit: Unit) -> list[tuple[bytes, tuple[bytes, ...]]]:
    """Each trace of the unit with its span ids: a tombstone is looked up by trace."""
    return [(unit.trace_id, unit.span_ids), *unit.others]


def root_of(unit: Unit, records: list[SpanRecord]) -> SpanRecord | None:
    """The unit's conversation root among its spans (None: not here, or the unit has none)."""
    if unit.root_id is None:
        return None
    root_hex = unit.root_id.hex()
    return next((r for r in records if r.span_id == root_hex), None)


def compute_signals_of(records: list[SpanRecord], mappings: Sequence[SpanMapping] = ()) -> list[Signal]:
    """The judge library's model-free pass over the spans (no framework knowledge; a foreign conversation's
    structure is read through its adapter)."""
    return structural_signals(records, mappings)
