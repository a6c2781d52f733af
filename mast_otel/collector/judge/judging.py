"""Judging: a whole conversation -> (sampled?) -> judge in a worker -> labels -> store -> export queue.

``unit -> submit -> worker: load spans, sample, judge -> finish: signals, label, store.release, count -> exporter``

While more conversations are queued for the judge, their releases are written together, up to 64 in one
transaction (its fixed cost was about half of a release's store time); one with nothing queued behind it is
written at once, and each pipeline tick (:meth:`JudgePool.check`) writes what still waits. On a disk close to full
they go one per transaction, and on a full disk only while room for delivery is left (``SpanStore.tight``,
``SpanStore.room_to_release``).

Structural signals (facts, not verdicts) are computed at finish from the spans for every conversation, whatever the
verdict (ok, skipped, error, timed out), so a conversation never judged still carries them.

A judge that raises, returns garbage or overruns ``judge_timeout`` (queueing included) never holds spans longer:
the conversation is released with ``mast.judge.status=error`` and the reason, and a late answer is ignored. Cost
controls run before the judge: ``judge_fraction`` (deterministic by trace id; conversations with error spans or an
error/limit termination are always judged) and ``judge_token_budget_per_hour``; a conversation left out is
labelled ``skipped`` with the reason. If the store cannot take a verdict, the finish is retried on the next tick.

Shutdown (:meth:`JudgePool.shutdown`) takes no new work, cancels queued calls and gives running ones a short grace
to finish and store their verdicts; whatever is left stays held in the store. The next start judges it, except a
conversation whose paid judge call had begun: that call may have been billed, so (``judge_interrupted=error``) it
is released with an error verdict instead; see :mod:`.verdicts`.
The workers are daemon threads, so a judge call that never returns cannot keep the process alive.

This module keeps the pool's own job (deadlines, retries, the at-most-once claims, shutdown); the parts are
:mod:`.workers` (the threads), :mod:`.cost_controls` (fraction and budget) and :mod:`.release_builder` (signals,
labels, verdict span, tombstone).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field

from mast_otel import semconv as sc
from mast_otel.adapters import (
    MAX_VALUE_CHARS,
    MAX_VALUE_DEPTH,
    TOO_DEEP,
    TOO_LARGE,
    Ignored,
    SpanMapping,
    is_native,
    screen,
)
from mast_otel.collector.assemble.assembler import Assembler, Unit
from mast_otel.collector.history.entry import entry_of
from mast_otel.collector.history.writer import VerdictHistory
from mast_otel.collector.judge.cost_controls import CostControls
from mast_otel.collector.judge.judges import judge_name
from mast_otel.collector.judge.log_events import with_log_events
from mast_otel.collector.judge.workers import Workers
from mast_otel.collector.metrics import UNASSIGNED_NOT_A_CONVERSATION, CollectorMetrics, MetricNames
from mast_otel.collector.release.builder import COLLECTOR_SCOPE, Release, ReleaseBuilder, root_of
from mast_otel.collector.release.commit import (
    Loaded,
    SegmentCache,
    commit_releases,
    is_unreadable,
    persist_claim,
    persist_verdict,
    quarantine_release,
    verdict_from_json,
)
from mast_otel.collector.store.api import SpanStore
from mast_otel.collector.store.verdicts import CLAIMED
from mast_otel.judge.foreign import judge_spans, not_a_conversation
from mast_otel.judge.model import Judge, Verdict
from mast_otel.spans import SpanRecord

__all__ = ["COLLECTOR_SCOPE", "JudgePool"]

_log = logging.getLogger(__name__)
# Releases written in one transaction at most. A release waits for others only while more conversations are queued
# for the judge; the pipeline's next tick (check) writes whatever waits, so it is never held longer than that.
_GROUP = 64
_INTERRUPTED = (
    "the collector stopped while this conversation was being judged; it is not judged again, so it is "
    "never billed twice (judge_interrupted=again judges it again)"
)


# Why a value is left out, as the first log line per reason says it.
_BOUNDS = {TOO_DEEP: f"nested deeper than {MAX_VALUE_DEPTH} levels", TOO_LARGE: f"longer than {MAX_VALUE_CHARS} "
           "characters"}  # fmt: skip

_QUEUED, _RUNNING, _CANCELLED = 0, 1, 2  # a job's call: waiting for a worker, taken by one, never to run


@dataclass(eq=False, slots=True)
class _Job:
    unit: Unit
    submitted: float
    deadline: float
    call: int = _QUEUED  # under the pool's _jobs_lock
    done: bool = False
    recorded: bool = False  # its verdict is in the history (a release written again is not recorded twice)
    ignored: tuple[Ignored, ...] = ()  # attribute values the judge's copy left out, counted once it is released


@dataclass
class _Outcome:
    loaded: Loaded
    records: list[SpanRecord]
    verdict: Verdict
    seconds: float
    called_judge: bool = dc_field(default=False)


@dataclass(eq=False)
class _Ready:
    """A release built and waiting to be written (with others, when more conversations are queued behind it)."""

    job: _Job
    verdict: Verdict
    outcome: _Outcome | None
    release: Release


class JudgePool:
    """Runs the judge on assembled conversations with bounded concurrency and a per-conversation deadline."""

    def __init__(
        self,
        *,
        judge: Judge,
        store: SpanStore,
        assembler: Assembler,
        lock: threading.RLock,
        metrics: CollectorMetrics,
        concurrency: int,
        timeout: float,
        fraction: float,
        token_budget_per_hour: int,
        clock: Callable[[], float],
        cache: SegmentCache,
        on_released: Callable[[], None],
        on_verdict: Callable[[Verdict, str, str | None], None] | None = None,
        rejudge_interrupted: bool = False,
        history: VerdictHistory | None = None,
        mappings: Sequence[SpanMapping] = (),
    ) -> None:
        self.judge = judge
        self._mappings = mappings  # the user's span mappings, read before the built-in readers
        self.judge_name = judge_name(judge)
        # The label source an error verdict reports: the kind of judge that failed.
        self._source = sc.SOURCE_NONE if self.judge_name in ("signals", "none", "unavailable") else sc.SOURCE_LLM
        self._paid = self._source != sc.SOURCE_NONE  # a model-free judge costs nothing to call again after a crash
        self._rejudge = rejudge_interrupted
        self._store = store
        self._assembler = assembler
        self._lock = lock
        self._metrics = metrics
        self._timeout = timeout
        self._costs = CostControls(fraction=fraction, token_budget_per_hour=token_budget_per_hour, clock=clock)
        self._clock = clock
        self._on_released = on_released
        self._on_verdict = on_verdict  # after a verdict is stored: (verdict, trace id hex, root span id hex)
        self._cache = cache
        self._builder = ReleaseBuilder(judge_name=self.judge_name, metrics=metrics, clock=clock,
                                       resource_of=lambda rid: store.resource(rid)[0], mappings=mappings)  # fmt: skip
        self._history = history
        self._workers = Workers(concurrency, "judge")
        self._jobs: dict[int, _Job] = {}
        self._jobs_lock = threading.Lock()
        self._retry: list[tuple[_Job, Verdict]] = []
        self._ready: list[_Ready] = []  # built, not written yet (under the pipeline lock)
        self._closed = False  # shutdown began: no new work
        self._stopping = False  # the grace is over: nothing more is written to the store
        self._ignored_seen: set[str] = set()  # the reasons a left-out value was logged at info for

    @property
    def in_flight(self) -> int:
        """Conversations waiting for their verdict or its release; one whose release is retried is still a job."""
        return len(self._jobs)

    def submit(self, unit: Unit) -> None:
        now = self._clock()
        job = _Job(unit, submitted=now, deadline=now + self._timeout)
        with self._jobs_lock:
            if self._closed:
                return  # shutting down: the conversation stays held in the store; the next start judges it
            self._jobs[id(job)] = job
        self._workers.call(self._work, job)

    # -- worker side -------------------------------------------------------------------------------------------
    def _work(self, job: _Job) -> None:
        with self._jobs_lock:
            if job.call == _CANCELLED:  # timed out or shut down while queued
                return
            job.call = _RUNNING
        try:
            outcome = self._run(job)
        except Exception as exc:
            self._complete(job, None, exc)
        else:
            self._complete(job, outcome, None)

    def _run(self, job: _Job) -> _Outcome | None:
        if job.done:
            return None  # timed out while queued
        started = time.perf_counter()
        loaded = Loaded.read(self._cache, job.unit.locations)
        records = self._records(job, loaded)
        root = root_of(job.unit, records)
        verdict = self._costs.sample(job.unit.trace_id, job.unit.key, root, records)
        saved = self._store.verdict(job.unit.trace_id, job.unit.key) if verdict is None else None
        if saved == CLAIMED and self._paid and not self._rejudge:  # a crash cut a call short: it may have been billed
            self._metrics.judge_errors.labels("interrupted").inc()
            verdict = Verdict.error(self._source, _INTERRUPTED)
        elif saved:  # judged before a crash: never judge (or bill) a conversation twice
            verdict = verdict_from_json(saved)
        called = verdict is None
        if verdict is None:
            if self._paid:
                persist_claim(self._store, job.unit.trace_id, job.unit.key, self._clock())
            missing = _messages_missing(root, records)
            verdict = judge_spans(self.judge, records, partial=job.unit.partial or missing is not None,
                                  mappings=self._mappings)  # fmt: skip
            if not isinstance(verdict, Verdict):
                raise TypeError(f"judge returned {type(verdict).__name__}, not a Verdict")
            if (job.unit.partial or missing) and verdict.status in (sc.JUDGE_OK, sc.JUDGE_PARTIAL):
                verdict = dataclasses.replace(
                    verdict,
                    status=sc.JUDGE_PARTIAL,
                    status_reason=verdict.status_reason
                    or missing
                    or "conversation not finished; judged on the spans seen so far",
                )
            if verdict.tokens_in or verdict.tokens_out or verdict.cost_usd:  # it was paid for: never pay twice
                persist_verdict(self._store, job.unit.trace_id, job.unit.key, verdict, self._clock())
        return _Outcome(loaded, records, verdict, time.perf_counter() - started, called)

    def _records(self, job: _Job, loaded: Loaded) -> list[SpanRecord]:
        """The conversation's spans as the judge and the signals read them: within the adapters' bounds (a value
        nested too deep or too large is left out of this copy, whoever wrote it; the spans are exported as they
        came), the values left out noted on the job."""
        screened = screen(self._read(job.unit, loaded))
        job.ignored = screened.ignored
        return screened.spans

    def _read(self, unit: Unit, loaded: Loaded) -> list[SpanRecord]:
        """The conversation's spans, decoded. With a judge that reads no content,
        a mast-otel conversation's summaries (:mod:`.summaries`): kept at ingest, or made from the stored spans
        when ingest kept none; anything else (ingest found no mast-otel span, or the summaries show none) is
        decoded in full. Log records kept for the trace's spans join them as events (:mod:`.log_events`)."""
        logs = [row for trace_id in unit.trace_ids for row in self._store.log_records(trace_id)]
        if logs:
            return with_log_events(loaded.records(self._store), logs)
        summaries = self._cache.summaries
        if summaries is None or summaries.foreign(unit.locations):
            return loaded.records(self._store)
        records = summaries.records(unit.locations)
        if records is None:
            records = loaded.records(self._store, summary=True)
        return records if is_native(records) else loaded.records(self._store)

    def _complete(self, job: _Job, outcome: _Outcome | None, error: Exception | None) -> None:
        with self._jobs_lock:
            late = job.done
            job.done = True
        if late:  # timed out earlier and released with status error; a call that finished anyway was paid for
            self._charge_late(outcome)
            return
        if error is not None:
            self._metrics.judge_errors.labels("exception").inc()
            _log.warning("judge %s failed on trace %s: %s: %s", self.judge_name, job.unit.trace_id.hex(),
                         type(error).__name__, error)  # fmt: skip
            verdict = Verdict.error(self._source, f"judge failed: {type(error).__name__}: {error}"[:500])
        else:
            if outcome is None:
                return
            verdict = outcome.verdict
            if outcome.called_judge:
                self._metrics.judge_duration.labels(verdict.source).observe(outcome.seconds)
                self._costs.spend(verdict.tokens_in + verdict.tokens_out)
        self._finish(job, verdict, outcome)

    def _charge_late(self, outcome: _Outcome | None) -> None:
        if outcome is not None and outcome.called_judge:
            v = outcome.verdict
            self._costs.spend(v.tokens_in + v.tokens_out)
            self._metrics.count_spend(v.tokens_in, v.tokens_out, v.cost_usd)

    # -- finishing -----------------------------------------------------------------------------------------------
    def check(self, now: float) -> None:
        """Release overdue conversations with an error verdict; retry finishes the store refused; write the
        releases waiting for their group."""
        overdue: list[_Job] = []
        room = self._store.room_to_release()  # on a full disk, releases that found no room wait for it
        with self._jobs_lock:
            for job in self._jobs.values():  # submission order is deadline order: stop at the first not yet due
                if now < job.deadline:
                    break
                if not job.done:
                    job.done = True
                    if job.call == _QUEUED:
                        job.call = _CANCELLED  # released now: its judge call never starts
                    overdue.append(job)
            retry, self._retry = (self._retry, []) if room else ([], self._retry)
        if self._history is not None:
            self._history.maintain(now)
        for job in overdue:
            self._metrics.judge_errors.labels("timeout").inc()
            _log.warning("judge %s overran judge_timeout on trace %s; releasing with status error",
                         self.judge_name, job.unit.trace_id.hex())  # fmt: skip
            self._finish(job, Verdict.error(self._source, f"judge timed out after {self._timeout:g}s"), None)
        for job, verdict in retry:
            self._finish(job, verdict, None)
        self._write()

    def _keep(self, job: _Job, verdict: Verdict, outcome: _Outcome | None) -> None:
        """The release cannot be written now: keep a fresh verdict so a restart does not judge (bill) it again."""
        if self._paid and outcome is not None and outcome.called_judge:
            persist_verdict(self._store, job.unit.trace_id, job.unit.key, verdict, self._clock())

    def _finish(self, job: _Job, verdict: Verdict, outcome: _Outcome | None) -> None:
        if self._stopping:
            self._keep(job, verdict, outcome)
            return  # the spans stay held in the store; the next start uses the kept verdict
        unit = job.unit
        try:
            if outcome is None:
                loaded = Loaded.read(self._cache, unit.locations)
                records = self._records(job, loaded)
            else:
                loaded, records = outcome.loaded, outcome.records
            release = self._builder.build(unit, job.submitted, verdict, loaded, records)
        except Exception as exc:
            self._failed(job, verdict, outcome, exc)
            return
        self._write(_Ready(job, verdict, outcome, release))

    def _write(self, ready: _Ready | None = None) -> None:
        """Write the releases built so far (with ``ready``) in one transaction, unless more conversations are queued
        for the judge and the group is not full: then the next finish (or the next tick) writes them together.

        On a full disk they go one at a time, each only while the disk keeps room for delivery
        (:meth:`~.store.SpanStore.room_to_release`); one that does not fit waits for a later tick."""
        with self._lock:  # shutdown sets _stopping under this lock, then closes the store
            tight = self._store.tight
            if ready is not None:
                self._ready.append(ready)
                if len(self._ready) < _GROUP and self._workers.backlog > 0 and not tight:
                    return
            group, self._ready = self._ready, []
            if not tight:
                committed = self._commit(group) if group else []
            else:
                committed = []
                for one in group:
                    if self._stopping or self._store.room_to_release(one.release.size):
                        committed += self._commit([one])
                    else:
                        self._defer(one)
        for done in committed:
            self._released(done)
        if committed:
            self._on_released()

    def _defer(self, ready: _Ready) -> None:
        """No room for this release on the full disk: it waits, its verdict kept, and is built again once the
        exports have freed space (:meth:`check`). Not an error: nothing failed."""
        self._keep(ready.job, ready.verdict, ready.outcome)
        with self._jobs_lock:
            self._retry.append((ready.job, ready.verdict))

    def _commit(self, group: list[_Ready]) -> list[_Ready]:
        """(Under the pipeline lock.) The releases written, all in one transaction; when that fails, each is tried
        alone at once, so a group never fails a release that fits (a full disk has room for one release, not
        always for 64) and one release's trouble is its own: a store error retries it, bytes that cannot be read
        back quarantine it."""
        if self._stopping:
            for ready in group:
                self._keep(ready.job, ready.verdict, ready.outcome)
            return []
        self._record(group)
        try:
            releases = [(r.job.unit.locations, r.release.outbox, r.release.tombs) for r in group]
            commit_releases(store=self._store, assembler=self._assembler, lock=self._lock, cache=self._cache,
                            releases=releases)  # fmt: skip
        except Exception as exc:
            if len(group) > 1:
                return [written for ready in group for written in self._commit([ready])]
            self._failed(group[0].job, group[0].verdict, group[0].outcome, exc)
            return []
        return group

    def _record(self, group: list[_Ready]) -> None:
        """(Under the pipeline lock, before the group's release transaction.) Their verdicts go to the history
        first, so a release that commits always has its verdict there, even across a kill -9 between the two."""
        if self._history is None:
            return
        todo = [r for r in group if not r.job.recorded and not not_a_conversation(r.verdict)]
        if not todo:
            return
        self._history.record([
            entry_of(r.verdict, trace_id=r.job.unit.trace_id, unit=r.job.unit.key, service=r.release.service,
                     version=r.release.version, framework=r.release.framework, judge_name=self.judge_name)
            for r in todo
        ])  # fmt: skip
        for r in todo:
            r.job.recorded = True

    def _failed(self, job: _Job, verdict: Verdict, outcome: _Outcome | None, exc: Exception) -> None:
        """(In an ``except`` block.) The release could not be built or written."""
        unit = job.unit
        if is_unreadable(exc):  # the stored bytes cannot be read back: retrying would never succeed
            quarantine_release(
                store=self._store,
                assembler=self._assembler,
                lock=self._lock,
                cache=self._cache,
                metrics=self._metrics,
                locations=unit.locations,
                trace_id=unit.trace_id,
                exc=exc,
            )
            with self._jobs_lock:
                self._jobs.pop(id(job), None)
            with self._lock:
                self._assembler.finished(unit)
            return
        self._metrics.judge_errors.labels("store").inc()
        _log.exception("could not store the verdict for trace %s; retrying", unit.trace_id.hex())
        self._keep(job, verdict, outcome)
        with self._jobs_lock:
            self._retry.append((job, verdict))

    def _released(self, ready: _Ready) -> None:
        """Bookkeeping once a release is committed: metrics, the assembler forgets the unit, the verdict sink."""
        job, verdict, release, unit = ready.job, ready.verdict, ready.release, ready.job.unit
        with self._lock:  # (before the job leaves the count in flight: whoever waits for none sees it forgotten)
            self._assembler.finished(unit)
        with self._jobs_lock:
            self._jobs.pop(id(job), None)
        unlabelled = not_a_conversation(verdict)
        if unlabelled:  # an adapter found no multi-agent conversation: passed through, counted as unassigned
            self._metrics.spans_unassigned.labels(UNASSIGNED_NOT_A_CONVERSATION).inc(len(unit.span_ids))
        else:
            self._metrics.count_verdict(verdict, release.service, release.framework, release.version)
            self._metrics.count_signals(release.signals, release.service, release.framework)
        self._count_ignored(job)
        if self._on_verdict is not None and not unlabelled:
            try:
                self._on_verdict(verdict, unit.trace_id.hex(), unit.root_id.hex() if unit.root_id else None)
            except Exception:  # an optional sink must never fail a release that is already committed
                _log.exception("verdict sink failed for trace %s", unit.trace_id.hex())

    def _count_ignored(self, job: _Job) -> None:
        """Each value the judge's copy left out, counted by reason; logged (where, never the value) at debug, and
        once per reason at info, saying why."""
        for item in job.ignored:
            self._metrics.values_ignored.labels(item.reason).inc()
            where = f"{item.key} of span {item.span_id}" + (f" (event {item.event})" if item.event else "")
            _log.debug("trace %s: %s left out (%s)", job.unit.trace_id.hex(), where, item.reason)
            if item.reason not in self._ignored_seen:
                self._ignored_seen.add(item.reason)
                _log.info("an attribute value %s is left out of the conversation the judge reads (first: %s, trace "
                          "%s); counted in %s{reason=%s}", _BOUNDS[item.reason], where, job.unit.trace_id.hex(),
                          MetricNames.VALUES_IGNORED, item.reason)  # fmt: skip

    def shutdown(self, grace: float) -> None:
        """Take no new work, cancel queued calls, give running ones ``grace`` seconds to finish and store.

        Conversations not finished by then stay held in the store (the next start judges them); a judge call
        still running is abandoned in its daemon thread and its answer, if any, is dropped.
        """
        with self._jobs_lock:
            self._closed = True
            for key, job in list(self._jobs.items()):
                if job.call == _QUEUED:  # still queued: the spans stay held; the next start judges them
                    job.call = _CANCELLED
                    if not job.done:
                        job.done = True
                        del self._jobs[key]
        self._workers.close()
        deadline = time.monotonic() + grace
        self._write()  # releases that waited for a group: nothing is queued any more, none is coming
        while self._running() and time.monotonic() < deadline:
            time.sleep(0.02)
        with self._lock:
            self._stopping = True
        self._write()  # releases still waiting (a full disk): their paid verdicts are kept for the next start
        if left := self._running():
            _log.warning("stopping with %d conversations still being judged; the next start judges them again",
                         left)  # fmt: skip

    def _running(self) -> int:
        """Jobs whose judge call, or the store write of its verdict, is under way (not those awaiting a retry)."""
        with self._jobs_lock:
            retrying = {id(job) for job, _ in self._retry}
            return sum(key not in retrying for key in self._jobs)


def _messages_missing(root: SpanRecord | None, records: list[SpanRecord]) -> str | None:
    """Why the verdict can only be partial although the root is here, or None.

    A recorder root counts the messages its conversation recorded (``mast.conversation.rounds``). Fewer message
    spans here means the rest went elsewhere (to another instance, when one was added behind the load balancer
    mid-conversation) or were lost upstream (an SDK queue that overflowed): a verdict on what is here is partial.
    """
    if root is None or root.span_type != sc.SPAN_TYPE_CONVERSATION:
        return None
    recorded = root.get(sc.CONVERSATION_ROUNDS)
    if not isinstance(recorded, int) or isinstance(recorded, bool):
        return None
    conversation = root.get(sc.GEN_AI_CONVERSATION_ID)
    here = {
        r.get(sc.MESSAGE_INDEX)
        for r in records
        if r.span_type == sc.SPAN_TYPE_MESSAGE and r.get(sc.GEN_AI_CONVERSATION_ID) == conversation
    }
    if len(here) >= recorded:
        return None
    return f"{len(here)} of the {recorded} messages the conversation recorded arrived here; judged on those"
