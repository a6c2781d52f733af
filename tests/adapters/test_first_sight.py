"""First sight (issue 46): runs of framework/instrumentation pairs the adapters were not written for
(``tests/data/first_sight/<pair>/<run>.json``, the captures' format), scored as the adapters read them today.

Each file's ``"first_sight"`` entry is, per point, what test_captures.py checks of a capture (``read_points``):
``true`` where it is read right, else what is read instead. A run is read right when every point is. The test
holds the entries to what the code reads exactly, both ways: a fix that makes a point right fails here until the
entry says so, and so does a change that breaks one. After a change that moves a score, rewrite the entries with
``python -m tests.adapters.test_first_sight`` (in the main environment) and update the "now" column of
docs/adapters.md "First sight" (its "first sight" column keeps the score recorded before any change).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: the scores are checked in the main tier")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adapters.test_captures import read_points

FIRST_SIGHT = Path(__file__).resolve().parents[1] / "data" / "first_sight"
FILES = sorted(FIRST_SIGHT.glob("*/*.json"))


def _entry(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")).get("first_sight")


def _expect(path: Path) -> dict[str, Any]:
    expect: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["expect"]
    return expect


def right(points: dict[str, Any]) -> bool:
    """A run is read right when every point checked is."""
    return all(value is True for value in points.values())


def scores(entries: dict[Path, dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per pair (directory): (runs read right on every point, all runs)."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, points in entries.items():
        found[path.parent.name][0] += right(points)
        found[path.parent.name][1] += 1
    return {pair: (good, total) for pair, (good, total) in sorted(found.items())}


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_a_first_sight_run_reads_as_its_entry_says(path: Path) -> None:
    entry = _entry(path)
    assert entry is not None, "no first_sight entry: python -m tests.adapters.test_first_sight writes it"
    assert read_points(path) == entry, "the code reads this run differently now: rewrite the entry, update the docs"


def test_the_score_table_is_the_entries() -> None:
    """The per-pair scores the docs give as "now" are those of the recorded entries (a run right only when all
    points are), beside the first-sight score, and each pair has a multi-agent run and a solo control."""
    entries = {path: _entry(path) for path in FILES}
    table = scores({path: entry for path, entry in entries.items() if entry is not None})
    assert set(table) == {path.parent.name for path in FILES}
    for pair in table:
        kinds = {_expect(p)["conversation"] for p in FILES if p.parent.name == pair}
        assert kinds == {True, False}, f"{pair}: a multi-agent run and a solo control"
    documented = (Path(__file__).resolve().parents[2] / "docs" / "adapters.md").read_text(encoding="utf-8")
    for pair, (good, total) in table.items():
        # columns: the pair, its first-sight score (recorded before any change for it: kept as it was), now
        row = re.search(rf"^\| `{re.escape(pair)}` \| \d+/{total} \| {good}/{total} \|", documented, re.MULTILINE)
        assert row, f"docs/adapters.md First sight: {pair}, now {good}/{total}"


_MISREAD = st.one_of(st.just(False), st.none(), st.integers(), st.text(), st.lists(st.text(), min_size=1),
                     st.dictionaries(st.text(), st.integers(), min_size=1))  # fmt: skip


_POINTS = st.dictionaries(st.sampled_from(["agents", "task", "text"]), st.one_of(st.just(True), _MISREAD), min_size=1)


@settings(suppress_health_check=[HealthCheck.too_slow])  # (nested text, dicts and lists: slow to draw, cold)
@given(st.lists(st.tuples(st.sampled_from(["a_pair", "b_pair"]), _POINTS), max_size=12))
def test_a_run_scores_right_only_when_every_point_is_true(runs: list[tuple[str, dict[str, Any]]]) -> None:
    """What is read instead (a name, a list, a count, an object: all truthy) never counts as right."""
    entries = {Path(pair, f"{index}.json"): points for index, (pair, points) in enumerate(runs)}
    table = scores(entries)
    for pair, (good, total) in table.items():
        mine = [points for (name, points) in runs if name == pair]
        assert total == len(mine)
        assert good == sum(all(value is True for value in points.values()) for points in mine)
    assert sum(total for _, total in table.values()) == len(runs)


def write_entries(paths: list[Path]) -> None:
    """Record what the code reads of each run as its entry (the files keep their other keys and layout)."""
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["first_sight"] = read_points(path)
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"{path.parent.name}/{path.stem}: {'right' if right(data['first_sight']) else data['first_sight']}")


if __name__ == "__main__":
    write_entries([Path(a) for a in sys.argv[1:]] or FILES)
