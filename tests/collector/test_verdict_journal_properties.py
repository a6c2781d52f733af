"""The verdict journal as a property: whatever a collector does (save verdicts, claim judge calls, release,
compact with any horizon, restart), a verdict or claim that was kept, not released, and is not older than the last
horizon is what both the running journal and a restarted one read; a compaction never loses one and never brings
back one that was released or older than its horizon.

The oracle is a model written from the module's documentation: the running journal is a map (save and claim
write it, release and compaction take from it); the file is the lines appended since the last compaction, which
rewrote it as that map; a restart reads the file in order, the last line of a conversation winning.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.collector.store.verdicts import CLAIMED, VerdictJournal

KEYS = [(bytes.fromhex("0af7651916cd43dd8448eb211c80319c"), "u1"), (bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
        "u2"), (bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736"), "u1"), (bytes(16), "")]  # fmt: skip
VERDICTS = [json.dumps({"status": "ok", "modes": [{"mode_id": "1.3"}]}), json.dumps({"status": "ok", "modes": []}),
            '{"status": "partial", "summary": "a \\"quoted\\" line\\nand another"}']  # fmt: skip
TIMES = st.integers(min_value=0, max_value=6).map(float)

_OPS = st.one_of(
    st.tuples(st.just("save"), st.sampled_from(range(len(KEYS))), st.sampled_from(VERDICTS), TIMES),
    st.tuples(st.just("claim"), st.sampled_from(range(len(KEYS))), st.just(CLAIMED), TIMES),
    st.tuples(st.just("released"), st.sampled_from(range(len(KEYS))), st.just(""), st.just(0.0)),
    st.tuples(st.just("compact"), st.just(0), st.just(""), TIMES),
    st.tuples(st.just("restart"), st.just(0), st.just(""), st.just(0.0)),
)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(_OPS, max_size=25))
def test_what_is_kept_survives_compactions_and_restarts(ops: list[tuple[str, int, str, float]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "verdicts")
        journal = VerdictJournal(path)
        memory: dict[tuple[bytes, str], tuple[str, float]] = {}
        file: list[tuple[tuple[bytes, str], str, float]] = []  # the lines a restart reads, in order
        try:
            for op, k, verdict, at in ops:
                key = KEYS[k]
                if op in ("save", "claim"):
                    journal.save(*key, verdict, at) if op == "save" else journal.claim(*key, at)
                    memory[key] = (verdict, at)
                    file.append((key, verdict, at))
                elif op == "released":
                    journal.released(*key)
                    memory.pop(key, None)
                elif op == "compact":
                    journal.compact(at)
                    memory = {key: v for key, v in memory.items() if v[1] >= at}
                    file = [(key, v, t) for key, (v, t) in memory.items()]
                    # right after a compaction a restart reads exactly what the running journal keeps
                    again = VerdictJournal(path)
                    assert {key: again.get(*key) for key in KEYS} == {key: journal.get(*key) for key in KEYS}
                    again.close()
                else:  # a restart reads the file: every line since the last compaction, the last one winning
                    journal.close()
                    journal = VerdictJournal(path)
                    memory = {key: (v, t) for key, v, t in file}
                assert {key: journal.get(*key) for key in KEYS} == {key: memory.get(key, (None,))[0] for key in KEYS}
                assert len(journal) == len(memory)
        finally:
            journal.close()
