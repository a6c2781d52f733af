"""A full disk: the collector refuses new spans with retryable errors, and every span it acknowledged is delivered
once the downstream is back, across a kill -9, without anyone freeing space by hand.

The store lives on an 8 MiB tmpfs the test mounts (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from mast_otel.collector.store.api import DELIVERY_ROOM, NewSegment, SQLiteStore, StoreError
from tests.collector.conftest import metric, recorded, wait_until
from tests.collector.sink import OtlpSink
from tests.collector.test_durability import CollectorProcess

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RETRYABLE = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the disk-full test: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def _export(channel: grpc.Channel, payload: bytes) -> tuple[grpc.StatusCode, bool]:
    """(status, whether the refusal carried retry advice)."""
    try:
        channel.unary_unary(EXPORT)(payload, timeout=30)
        return grpc.StatusCode.OK, False
    except grpc.RpcError as err:
        trailers = dict(err.trailing_metadata() or ())
        return err.code(), "google.rpc.retryinfo-bin" in trailers


@pytest.mark.parametrize("reserve", ["1MiB", "64MiB"], ids=["reserve-fits", "reserve-larger-than-the-disk"])
def test_full_disk_refuses_retryably_and_delivers_everything_acknowledged(
    tmp_path: Path, small_disk: Path, reserve: str
) -> None:
    """64 MiB (the default) on the 8 MiB disk: the reserve is sized to what the disk allows, and still delivers."""
    sink = OtlpSink()  # not started: the downstream is down while the disk fills
    collector = CollectorProcess(tmp_path, sink, store=small_disk / "collector.db",
                                 extra=["--store-reserve", reserve, "--max-request-bytes", "1MiB"])  # fmt: skip
    collector.start()
    acked: set[tuple[str, str]] = set()
    refusals: list[tuple[grpc.StatusCode, bool]] = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            for _ in range(200):  # bounded: 8 MiB holds far fewer than 200 x 20 conversations
                batch = recorded(20)
                code, advice = _export(channel, bytes(encode_spans(batch).SerializeToString()))
                if code == grpc.StatusCode.OK:
                    acked |= {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in batch}
                    continue
                refusals.append((code, advice))
                if len(refusals) >= 5:
                    break
        assert len(refusals) >= 5, "the disk never filled"
        assert all(code in RETRYABLE for code, _ in refusals), refusals  # never a permanent error for a full disk
        # The gauge is 1 while the disk is full; the store may already have checkpointed its WAL and retaken its
        # reserve by the time of the scrape, and then it must have said so.
        full_now = metric(collector.metrics(), "mast_collector_store_disk_full")
        assert full_now == 1 or "the store's disk has room again" in collector.log.read_text(), full_now
        assert "the store's disk is full" in collector.log.read_text()
        assert metric(collector.metrics(), "mast_collector_requests_refused_total", protocol="grpc",
                      reason="disk_full") >= 1  # fmt: skip
        if reserve == "64MiB":
            assert "do not fit on the store's disk" in collector.log.read_text()
        collector.kill9()  # and the restart must come up on the full disk
        collector.start()
        sink.start()
        got = sink.wait_for(lambda spans: acked <= {s.key for s in spans}, timeout=120)
        assert acked <= {s.key for s in got}
        print(f"\n{len(acked)} acknowledged spans filled the 8 MiB disk; all delivered after the downstream returned")

        def accepting_again() -> bool:  # the store gave its freed pages back and took its reserve again
            with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
                return _export(channel, bytes(encode_spans(recorded(1)).SerializeToString()))[0] == grpc.StatusCode.OK

        wait_until(accepting_again, timeout=60, what="the collector accepting spans again")
    finally:
        collector.stop()
        sink.stop()


def test_a_reserve_larger_than_the_disk_is_sized_to_it_and_said(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(str(small_disk / "s.db"), reserve=64 << 20)
    try:
        made = (small_disk / "s.db.reserve").stat().st_size
        assert 0 < made <= 4 << 20  # at most half the 8 MiB disk: the rest is the store's
        assert store._reserve.size == made  # the size the full-disk log will name is the one that exists
        assert "do not fit on the store's disk" in caplog.text and str(made) in caplog.text
    finally:
        store.close()


def test_no_room_for_a_reserve_is_a_clear_error_at_startup(small_disk: Path) -> None:
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    with open(small_disk / "filler", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, free - (256 << 10))  # 256 KiB left: less than the smallest useful reserve
    with pytest.raises(StoreError, match=r"too little for a disk-full reserve.*store_reserve to 0"):
        SQLiteStore(str(small_disk / "s.db"), reserve=1 << 20)
    SQLiteStore(str(small_disk / "t.db"), reserve=0).close()  # no reserve asked: it starts


def _fill(disk: Path, leave: int) -> None:
    """Take the disk's free space down to about ``leave`` bytes (another process filling it)."""
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    with open(disk / f"filler{len(list(disk.glob('filler*')))}", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, max(free - leave, 1))


def _segment(size: int) -> list[NewSegment]:
    return [NewSegment(resource=1, received=0.0, data=os.urandom(size))]


def test_a_disk_close_to_full_checkpoints_every_commit_out_of_the_wal(small_disk: Path) -> None:
    """Close to full (less free than twice the reserves and the delivery room), a commit leaves nothing in the WAL:
    committed pages the database has not grown into would need that room again at a checkpoint after a crash."""
    store = SQLiteStore(str(small_disk / "s.db"), reserve=1 << 20)
    wal = small_disk / "s.db-wal"
    try:
        assert not store.tight
        store.write(segments=_segment(64 << 10))
        assert wal.stat().st_size > 0  # the background checkpointer copies it later
        _fill(small_disk, 2 << 20)  # below 2 x (1 MiB + 256 KiB) + 256 KiB
        assert store.tight and not store.disk_full
        store.write(segments=_segment(64 << 10))
        assert wal.stat().st_size == 0
    finally:
        store.close()


def test_on_a_full_disk_a_release_needs_the_wal_empty_and_room_left_for_delivery(small_disk: Path) -> None:
    store = SQLiteStore(str(small_disk / "s.db"), reserve=1 << 20)
    try:
        assert store.room_to_release(1 << 30)  # the disk is not full: nothing is held back
        _fill(small_disk, 64 << 10)
        with pytest.raises(sqlite3.OperationalError):
            store.write(segments=_segment(512 << 10))  # ingest fails: the reserve is given up
        assert store.disk_full and store.room_to_release(0)  # it checkpoints: the failed write's WAL space is free
        free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
        assert free >= DELIVERY_ROOM + (256 << 10)
        half = (free - DELIVERY_ROOM) // 2  # the largest release that fits: its WAL frames, then its pages
        assert store.room_to_release(half - 4096)
        assert not store.room_to_release(half + 4096)
        _fill(small_disk, DELIVERY_ROOM - (64 << 10))
        assert not store.room_to_release(0)  # what is left is delivery's
    finally:
        store.close()
