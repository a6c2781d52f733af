"""Judging a conversation another instrumentation recorded: adapt, judge the synthetic spans, map labels back.

:func:`judge_spans` is the one place a conversation's spans meet a judge, for the collector and the CLI alike.
With mast-otel's own spans, or spans no adapter knows, it is the judge itself. With a foreign conversation it
judges the adapter's synthetic spans (mast-otel's shapes, so the transcript and signals need no change), then
rewrites the verdict's span ids (evidence, decisive message) to the foreign spans they came from and names the
adapter and framework in ``Verdict.extra``; the labeller puts ``mast.source`` on the root from there. Spans an
adapter finds no multi-agent conversation in are not judged: the verdict is ``skipped`` and marked
:data:`NOT_A_CONVERSATION`, which the collector releases unlabelled and counts by that reason. A conversation
whose framework recorded no message content is not sent to the judge (it cannot label what it cannot read): the
verdict is ``skipped`` with the adapter's reason, which names the framework's switch, and lands on the foreign
root like any other. :func:`structural_signals` computes the model-free signals on the adapted structure, so they
run whatever the content, with their evidence on the foreign spans too. At debug level it logs what the reader
found in each run and why it is judged or not (:func:`mast_otel.adapters.explain.describe`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from mast_otel.adapters import Adapted, NotAConversation, SpanMapping, adapt
from mast_otel.adapters.explain import describe
from mast_otel.spans import SpanRecord

from .model import Judge, ModeLabel, Verdict
from .signals import Signal, compute_signals
from .view import build_view

__all__ = [
    "EXTRA_FRAMEWORK", "EXTRA_SOURCE", "NOT_A_CONVERSATION", "judge_spans", "not_a_conversation",
    "structural_signals",
]  # fmt: skip

_log = logging.getLogger(__name__)

EXTRA_SOURCE = "source"  # Verdict.extra key: the adapter that read the conversation
EXTRA_FRAMEWORK = "framework"  # Verdict.extra key: the framework as the adapter saw it
NOT_A_CONVERSATION = "not_a_conversation"  # Verdict.extra key: the adapter that found no conversation


def judge_spans(
    judge: Judge, spans: Sequence[SpanRecord], *, partial: bool = False, mappings: Sequence[SpanMapping] = ()
) -> Verdict:
    """The verdict for one conversation's spans, whichever instrumentation wrote them (``mappings``: the user's
    own span mappings, read before the built-in readers)."""
    adapted = adapt(spans, mappings)
    if _log.isEnabledFor(logging.DEBUG) and spans:
        _log.debug("trace %s: %s", spans[0].trace_id, describe(adapted))
    if adapted is None:
        return judge.judge(spans, partial=partial)
    if isinstance(adapted, NotAConversation):
        return dataclasses.replace(
            Verdict.skipped(f"{adapted.source}: {adapted.reason}"), extra={NOT_A_CONVERSATION: adapted.source}
        )
    if adapted.no_content:
        return to_foreign(Verdict.skipped(adapted.no_content), adapted)
    return to_foreign(judge.judge(list(adapted.records), partial=partial), adapted)


def structural_signals(spans: Sequence[SpanRecord], mappings: Sequence[SpanMapping] = ()) -> list[Signal]:
    """The model-free signals of one conversation's spans, whichever instrumentation wrote them: a foreign
    conversation's are computed on its adapted structure and point at the foreign spans."""
    adapted = adapt(spans, mappings)
    if adapted is None:
        return compute_signals(build_view(spans))
    if isinstance(adapted, NotAConversation):
        return []
    signals = compute_signals(build_view(list(adapted.records)))
    return [
        dataclasses.replace(s, evidence_span_ids=tuple(dict.fromkeys(map(adapted.original, s.evidence_span_ids))))
        for s in signals
    ]


def not_a_conversation(verdict: Verdict) -> bool:
    """The spans held no multi-agent conversation: release them unlabelled."""
    return NOT_A_CONVERSATION in verdict.extra


def to_foreign(verdict: Verdict, adapted: Adapted) -> Verdict:
    """The verdict with synthetic span ids replaced by the foreign spans they came from."""
    modes = tuple(
        ModeLabel(m.mode_id, tuple(dict.fromkeys(adapted.original(s) for s in m.evidence_span_ids)), m.reason)
        for m in verdict.modes
    )
    decisive = verdict.decisive
    if decisive is not None:
        decisive = dataclasses.replace(decisive, span_id=adapted.original(decisive.span_id))
    extra = {**verdict.extra, EXTRA_SOURCE: adapted.source, EXTRA_FRAMEWORK: adapted.framework}
    return dataclasses.replace(verdict, modes=modes, decisive=decisive, extra=extra)
