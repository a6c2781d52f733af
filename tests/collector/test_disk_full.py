"""A full disk: the collector refuses new spans with retryable errors, and every span it acknowledged is delivered
once the downstream is back, across a kill -9, without anyone freeing space by hand.

The store lives on an 8 MiB tmpfs the test mounts (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

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


def test_full_disk_refuses_retryably_and_delivers_everything_acknowledged(tmp_path: Path, small_disk: Path) -> None:
    sink = OtlpSink()  # not started: the downstream is down while the disk fills
    collector = CollectorProcess(tmp_path, sink, store=small_disk / "collector.db",
                                 extra=["--store-reserve", "1MiB", "--max-request-bytes", "1MiB"])  # fmt: skip
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
        assert metric(collector.metrics(), "mast_collector_store_disk_full") == 1
        assert metric(collector.metrics(), "mast_collector_requests_refused_total", protocol="grpc",
                      reason="disk_full") >= 1  # fmt: skip
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
