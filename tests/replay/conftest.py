from __future__ import annotations

import os
from pathlib import Path

import pytest

from mast_otel.steplist import StepRecord, load_steplist

# The recorded traces live outside the repository (../shared/mast-data); MAST_OTEL_MAST_DATA points elsewhere.
DATA = (
    Path(os.environ.get("MAST_OTEL_MAST_DATA", Path(__file__).resolve().parents[3] / "shared" / "mast-data"))
    / "parsers_output"
)
AG2_FILE = DATA / "ag2_output_mad.json"
METAGPT_FILE = DATA / "metagpt_output_mad.json"

# Real records picked for their shapes: a GSM MathChat, a Claude GSM MathChat, an MMLU group chat (a "system"
# manager step, consecutive steps by one agent, reference labels 2.2/2.3), a 28-step Olympiad MathChat.
AG2_PICKS = (0, 30, 226, 576)
# MetaGPT: a full 6-step run (round limit) and two runs that ended early (2 and 4 steps).
METAGPT_PICKS = (0, 74, 85)


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"recorded traces not found at {path}")
    return path


@pytest.fixture(scope="session")
def ag2_all() -> list[StepRecord]:
    return load_steplist(_require(AG2_FILE))


@pytest.fixture(scope="session")
def metagpt_all() -> list[StepRecord]:
    return load_steplist(_require(METAGPT_FILE))


@pytest.fixture(scope="session")
def picked(ag2_all: list[StepRecord], metagpt_all: list[StepRecord]) -> list[StepRecord]:
    return [ag2_all[i] for i in AG2_PICKS] + [metagpt_all[i] for i in METAGPT_PICKS]
