"""The verdict journal keeps what was paid for across a restart: a saved verdict, or a claim on a judge call that
began, is read back by a journal opened on the same file (a restarted collector), until its release is written.

The oracle is a second :class:`VerdictJournal` on the file (what a restart sees) and the file itself, decoded by
the format the module documents: one JSON line ``[trace_id hex, unit, verdict JSON or "", at]`` per entry.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mast_otel.collector.store.verdicts import CLAIMED, VerdictJournal

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
OTHER_TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
VERDICT = json.dumps({"status": "ok", "modes": [{"mode_id": "1.3"}]})
AT = 1_700_000_000.0


def lines(path: Path) -> list[list[object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_saved_verdict_is_read_back_after_a_restart(tmp_path: Path) -> None:
    # prepare
    path = tmp_path / "collector.db.verdicts"
    journal = VerdictJournal(str(path))
    # test: the verdict is saved; the process dies without closing the journal (a kill -9 leaves the file as is)
    journal.save(TRACE, "conv-1", VERDICT, AT)
    restarted = VerdictJournal(str(path))
    # verify: the restart finds the paid verdict (so it releases it, not judging again); other conversations none
    assert restarted.get(TRACE, "conv-1") == VERDICT
    assert restarted.get(TRACE, "conv-2") is None
    assert restarted.get(OTHER_TRACE, "conv-1") is None
    assert len(restarted) == 1
    assert lines(path) == [[TRACE.hex(), "conv-1", VERDICT, AT]]


def test_the_journal_line_is_written_at_save_not_at_close(tmp_path: Path) -> None:
    # the window a kill -9 can hit is right after the judge's answer: the line must be on disk by then
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "u", VERDICT, AT)
    assert path.read_bytes().endswith(b"\n")
    assert lines(path) == [[TRACE.hex(), "u", VERDICT, AT]]
    journal.close()


def test_a_claim_survives_a_restart_as_claimed(tmp_path: Path) -> None:
    path = tmp_path / "v"
    VerdictJournal(str(path)).claim(TRACE, "u", AT)
    restarted = VerdictJournal(str(path))
    assert restarted.get(TRACE, "u") == CLAIMED == ""
    assert restarted.get(TRACE, "u") is not None  # a claim is not "never judged": the judge must not be billed again


def test_a_verdict_after_its_claim_replaces_the_claim_on_restart(tmp_path: Path) -> None:
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.claim(TRACE, "u", AT)
    journal.save(TRACE, "u", VERDICT, AT + 1)
    assert journal.get(TRACE, "u") == VERDICT
    assert VerdictJournal(str(path)).get(TRACE, "u") == VERDICT


def test_released_verdicts_are_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "u", VERDICT, AT)
    journal.save(OTHER_TRACE, "u", VERDICT, AT)
    journal.released(TRACE, "u")
    journal.released(TRACE, "never saved")  # a release without a kept verdict (judged with no paid call) is fine
    assert journal.get(TRACE, "u") is None
    assert journal.get(OTHER_TRACE, "u") == VERDICT
    assert len(journal) == 1


def test_a_torn_last_line_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    # prepare: two whole lines, then one a kill cut mid-write
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "a", VERDICT, AT)
    journal.claim(OTHER_TRACE, "b", AT)
    journal.close()
    with open(path, "ab") as f:
        f.write(json.dumps([TRACE.hex(), "c", VERDICT, AT]).encode()[:25])
    # test
    restarted = VerdictJournal(str(path))
    # verify: the torn line is lost, the others are not, and the journal still appends after it
    assert restarted.get(TRACE, "a") == VERDICT
    assert restarted.get(OTHER_TRACE, "b") == CLAIMED
    assert restarted.get(TRACE, "c") is None
    assert len(restarted) == 2
    restarted.save(TRACE, "d", VERDICT, AT)
    assert VerdictJournal(str(path)).get(TRACE, "d") == VERDICT


@pytest.mark.parametrize(
    "line",
    [b'["zz", "u", "", 1.0]\n', b'["0af7", "u", "", "not a time"]\n', b'["0af7", "u", ""]\n', b"null\n"],
    ids=["bad-hex", "bad-time", "short", "not-a-list"],
)
def test_a_malformed_line_does_not_stop_the_restart(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "before", VERDICT, AT)
    journal.close()
    with open(path, "ab") as f:
        f.write(line + json.dumps([TRACE.hex(), "after", VERDICT, AT]).encode() + b"\n")
    restarted = VerdictJournal(str(path))
    assert (restarted.get(TRACE, "before"), restarted.get(TRACE, "after")) == (VERDICT, VERDICT)
    assert len(restarted) == 2


def test_compact_forgets_only_what_is_older_than_the_horizon(tmp_path: Path) -> None:
    # prepare: one entry before the horizon, one exactly at it, one after; one released before compacting
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "old", VERDICT, AT - 1)
    journal.save(TRACE, "at", VERDICT, AT)
    journal.claim(TRACE, "new", AT + 1)
    journal.save(TRACE, "gone", VERDICT, AT + 1)
    journal.released(TRACE, "gone")
    # test
    journal.compact(AT)
    # verify: in memory and in the rewritten file (what a restart reads) only "at" and "new" remain
    assert (journal.get(TRACE, "old"), journal.get(TRACE, "at"), journal.get(TRACE, "new")) == (None, VERDICT, "")
    assert sorted(entry[1] for entry in lines(path)) == ["at", "new"]  # type: ignore[type-var]
    assert not (tmp_path / "v.tmp").exists()
    restarted = VerdictJournal(str(path))
    assert (restarted.get(TRACE, "old"), restarted.get(TRACE, "at"), restarted.get(TRACE, "new")) == (None, VERDICT, "")
    assert restarted.get(TRACE, "gone") is None
    assert len(restarted) == 2


def test_saves_after_a_compaction_still_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "a", VERDICT, AT)
    journal.compact(AT)
    journal.save(TRACE, "b", VERDICT, AT)
    assert [entry[1] for entry in lines(path)] == ["a", "b"]
    assert VerdictJournal(str(path)).get(TRACE, "b") == VERDICT


def test_a_compaction_that_cannot_write_keeps_the_old_file_and_the_journal_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # prepare: the rewrite's temporary file cannot be created (a directory in its place stands for a full disk)
    path = tmp_path / "v"
    (tmp_path / "v.tmp").mkdir()
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "old", VERDICT, AT - 1)
    journal.save(TRACE, "kept", VERDICT, AT)
    # test
    journal.compact(AT)
    journal.save(TRACE, "later", VERDICT, AT)
    # verify: the old lines stay (harmless), the later save is appended, a warning names the file
    assert [entry[1] for entry in lines(path)] == ["old", "kept", "later"]
    restarted = VerdictJournal(str(path))
    assert restarted.get(TRACE, "later") == VERDICT
    assert journal.get(TRACE, "old") is None  # forgotten in memory all the same
    (warning,) = [r for r in caplog.records if r.name == "mast_otel.collector.store.verdicts"]
    assert warning.levelname == "WARNING"
    assert warning.getMessage().startswith(f"could not compact the verdict journal {path}: ")
    assert "Is a directory" in warning.getMessage()  # the cause, for the operator


def test_the_journal_file_is_private(tmp_path: Path) -> None:
    # a verdict's summary and reasons quote the conversation: only the collector's user may read it
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "u", VERDICT, AT)
    assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0
    journal.compact(AT)
    journal.save(TRACE, "w", VERDICT, AT)
    assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0


def test_a_memory_only_journal_keeps_verdicts_without_a_file(tmp_path: Path) -> None:
    journal = VerdictJournal(None)
    journal.claim(TRACE, "u", AT)
    assert journal.get(TRACE, "u") == CLAIMED
    journal.save(TRACE, "u", VERDICT, AT)
    assert journal.get(TRACE, "u") == VERDICT
    journal.compact(AT - 10)
    assert journal.get(TRACE, "u") == VERDICT
    journal.compact(AT + 1)
    assert journal.get(TRACE, "u") is None
    journal.close()
    assert list(tmp_path.iterdir()) == []


def test_close_releases_the_file_and_may_be_called_again(tmp_path: Path) -> None:
    path = tmp_path / "v"
    before = set(os.listdir("/proc/self/fd"))
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "u", VERDICT, AT)
    journal.compact(AT)
    journal.close()
    journal.close()
    assert set(os.listdir("/proc/self/fd")) <= before


def test_compact_after_close_writes_nothing(tmp_path: Path) -> None:
    # the store closes the journal at shutdown; a late garbage collection must neither fail nor reopen the file
    path = tmp_path / "v"
    journal = VerdictJournal(str(path))
    journal.save(TRACE, "old", VERDICT, AT - 1)
    journal.close()
    journal.compact(AT)
    assert [entry[1] for entry in lines(path)] == ["old"]
    assert not (tmp_path / "v.tmp").exists()
