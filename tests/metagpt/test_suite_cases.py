"""The MetaGPT cases of `mast-otel eval --suite`, in MetaGPT's environment: real teams traced by the MetaGPT
integration, checked against MetaGPT's own record (what its roles hold in memory), each raising the signal it was
built to raise and the control none."""

from __future__ import annotations

import pytest

from tests.metagpt.conftest import SKIP_REASON

pytest.importorskip("metagpt", reason=SKIP_REASON)

from mast_otel import semconv as sc
from mast_otel.evaluation.suite import run_metagpt_cases
from mast_otel.evaluation.suite_metagpt import METAGPT_CASES, run_team
from mast_otel.judge.signals import compute_signals
from mast_otel.judge.view import build_view


@pytest.mark.parametrize("case", METAGPT_CASES, ids=lambda c: c.name)
def test_case_matches_metagpt_record_and_raises_its_signal(case) -> None:
    spans, team = run_team(case)
    published = {m.content for role in team.env.roles.values() for m in role.rc.memory.get()}
    view = build_view(spans)
    assert {m.text for m in view.messages} == published  # every message MetaGPT's roles received, no other
    assert view.root_attr(sc.MAST_FRAMEWORK) == "metagpt"
    raised = {s.name for s in compute_signals(view)}
    if case.signal:
        assert case.signal in raised
    else:
        assert raised == set(), f"the control raised {raised}"


def test_the_suite_runs_the_metagpt_cases_in_process_here() -> None:
    conversations, left_out = run_metagpt_cases(None)
    assert left_out is None and [c.trace_key for c in conversations] == [c.name for c in METAGPT_CASES]
