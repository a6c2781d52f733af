from __future__ import annotations

import pytest

import mast_otel
from mast_otel import semconv as sc
from mast_otel import taxonomy


def test_fourteen_modes_three_categories() -> None:
    assert len(taxonomy.MODES) == 14
    assert len(set(taxonomy.MODE_IDS)) == 14
    assert {m.category.id for m in taxonomy.MODES} == {"FC1", "FC2", "FC3"}
    assert [m.id for m in taxonomy.MODES if m.category is taxonomy.SYSTEM_DESIGN] == ["1.1", "1.2", "1.3", "1.4", "1.5"]
    assert all(len(m.definition) > 40 for m in taxonomy.MODES)


def test_v3_meaning_of_verification_modes() -> None:
    assert taxonomy.mode("3.2").name == "No or incomplete verification"
    assert taxonomy.mode("3.3").name == "Incorrect verification"


def test_unknown_mode_names_the_valid_ids() -> None:
    with pytest.raises(KeyError, match=r"1\.1, 1\.2"):
        taxonomy.mode("1.6")


def test_fm_attribute() -> None:
    assert sc.fm_attribute("1.3") == "mast.fm.1_3"
    assert taxonomy.mode("2.6").slug == "2_6"


def test_public_surface() -> None:
    assert sorted(mast_otel.__all__) == [
        "AgentTurn",
        "CaptureConfig",
        "Conversation",
        "Handoff",
        "Recorder",
        "ToolCall",
        "__version__",
        "instrument",
        "recording_failures",
        "uninstrument",
    ]
