"""The collector process's garbage-collector settings (:mod:`mast_otel.collector.gc_tuning`), checked in a fresh
interpreter: they are process-wide, and this test process keeps its own."""

from __future__ import annotations

import json
import subprocess
import sys

from mast_otel.collector.gc_tuning import YOUNG_THRESHOLD

_PROBE = """
import gc, json, weakref
from mast_otel.collector import gc_tuning
gc.disable()  # nothing collects the cycle below before tune() does
before = gc.get_threshold()
class Loaded: pass
kept = [Loaded() for _ in range(1000)]
cycle = Loaded()
cycle.me = cycle
dead = weakref.ref(cycle)
del cycle
gc_tuning.tune()
print(json.dumps({"before": before, "after": gc.get_threshold(), "frozen": gc.get_freeze_count(),
                  "garbage_frozen": dead() is not None}))
"""


def test_tune_freezes_what_is_loaded_and_raises_only_the_young_threshold() -> None:
    out = json.loads(subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout)
    before, after = out["before"], out["after"]
    assert after == [YOUNG_THRESHOLD, before[1], before[2]] and YOUNG_THRESHOLD > before[0]
    assert out["frozen"] >= 1000  # the objects alive at the call, kept out of every later collection
    assert not out["garbage_frozen"]  # collected first: garbage is not frozen with them


def test_both_collector_entry_points_tune_before_serving() -> None:
    """``mast-otel collector`` and each shard process call it; the library (CollectorService) never does."""
    from pathlib import Path

    import mast_otel.collector as package

    root = Path(package.__file__).parent
    callers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "gc_tuning.tune()" in p.read_text())
    assert callers == ["cli.py", "scaleout/shard.py"]
