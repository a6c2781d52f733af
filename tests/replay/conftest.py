from __future__ import annotations

from pathlib import Path

import pytest

from mast_otel.steplist import StepRecord, load_steplist
from tests.mad_data import AG2_SAMPLE, AG2_SAMPLE_INDICES, METAGPT_SAMPLE, METAGPT_SAMPLE_INDICES, full_data_file

# Real records picked for their shapes (positions in the full files): a GSM MathChat, a Claude GSM MathChat, an
# MMLU group chat (a "system" manager step, consecutive steps by one agent, reference labels 2.2/2.3), a 28-step
# Olympiad MathChat; MetaGPT: a full 6-step run (round limit) and two runs that ended early (2 and 4 steps).
# All of them are in the samples shipped in tests/data/mad, so these tests run on a fresh clone.
AG2_PICKS = (0, 30, 226, 576)
METAGPT_PICKS = (0, 74, 85)


@pytest.fixture(scope="session")
def ag2_sample() -> list[StepRecord]:
    return load_steplist(AG2_SAMPLE)


@pytest.fixture(scope="session")
def metagpt_sample() -> list[StepRecord]:
    return load_steplist(METAGPT_SAMPLE)


@pytest.fixture(scope="session")
def picked(ag2_sample: list[StepRecord], metagpt_sample: list[StepRecord]) -> list[StepRecord]:
    return [ag2_sample[AG2_SAMPLE_INDICES.index(i)] for i in AG2_PICKS] + [
        metagpt_sample[METAGPT_SAMPLE_INDICES.index(i)] for i in METAGPT_PICKS
    ]


def _full(name: str) -> Path:
    return full_data_file(name)


@pytest.fixture(scope="session")
def ag2_all() -> list[StepRecord]:
    """Every recorded AG2 trace (the full file, outside the repository): skips when it is absent."""
    return load_steplist(_full("ag2_output_mad.json"))


@pytest.fixture(scope="session")
def metagpt_all() -> list[StepRecord]:
    return load_steplist(_full("metagpt_output_mad.json"))
