"""The shipped rules' own unit tests (``promtool test rules``, deploy/prometheus/mast-otel-rules.test.yml), and
proof that they test something: the same cases run against the rules with a guard taken out must fail.

The cases (the issue's acceptance): a real rise pages; a quiet hour with 2 failures of 3 does not; a judge outage
does not page as a failure spike, and does page as judge health.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.viewing._support import DEPLOY, RULES, require_binary

pytestmark = pytest.mark.integration

UNIT_TESTS = DEPLOY / "prometheus" / "mast-otel-rules.test.yml"


def promtool_test(rules: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    promtool = require_binary("promtool")
    (tmp_path / RULES.name).write_text(rules)
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    return subprocess.run([promtool, "test", "rules", UNIT_TESTS.name], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_the_shipped_rules_pass_their_unit_tests(tmp_path: Path) -> None:
    done = promtool_test(RULES.read_text(), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize(("guard", "remove", "fails"), [
    # without the minimum volume, the quiet hour's 2 of 3 pages (the slow burn)
    ("the minimum judged count", re.compile(r"\n\s*and on \(service\)\n\s*mast:conversations_judged:increase\w+ >= "
                                            r"on \(\) group_left mast:failure_alert_min_judged:count"),
     "name: quiet hour"),
    # without the judge's health, its outage pages as a failure spike
    ("the judge's health", re.compile(r"\n\s*unless on \(\) mast:judge_unhealthy"), "name: judge outage"),
])  # fmt: skip
def test_each_guard_is_what_keeps_its_case_quiet(tmp_path: Path, guard: str, remove: re.Pattern[str],
                                                 fails: str) -> None:  # fmt: skip
    rules, n = remove.subn("", RULES.read_text())
    assert n >= 3, f"{guard}: expected in every failure-mode alert, found {n}"
    done = promtool_test(rules, tmp_path)
    assert done.returncode != 0, f"the rules without {guard} still pass"
    assert fails in done.stderr, done.stdout + done.stderr


def test_the_outage_page_comes_from_the_judge_alert(tmp_path: Path) -> None:
    """Without MastJudgeOutage the outage case fails too: the page it expects comes from that alert."""
    text = RULES.read_text()
    start = text.index("      - alert: MastJudgeOutage")
    end = text.index("      - alert: MastJudgeTimeouts")
    done = promtool_test(text[:start] + text[end:], tmp_path)
    assert done.returncode != 0 and "alertname: MastJudgeOutage" in done.stderr, done.stdout + done.stderr


def test_the_per_mode_objective_docs_patterns_md_shows_works(tmp_path: Path) -> None:
    """The objective block docs/patterns.md tells users to write: each named mode gets its own, the rest the
    default."""
    doc = (DEPLOY.parents[2] / "docs" / "patterns.md").read_text()
    block = re.search(r"```yaml\n(      - record: mast:failure_objective:ratio\n.*?)```", doc, re.DOTALL)
    assert block, "docs/patterns.md no longer shows the objective rule"
    text = RULES.read_text()
    shipped = re.search(r"      - record: mast:failure_objective:ratio\n        expr: \|\n(          .*\n)+?", text)
    assert shipped
    rules = text.replace(shipped.group(0), block.group(1))
    (tmp_path / RULES.name).write_text(rules)
    (tmp_path / "objective.test.yml").write_text(f"""
rule_files: [{RULES.name}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'mast_failure_mode_total{{mode="2.3",category="FC2",service="s",version="1",framework="f"}}'
        values: '0+1x10'
      - series: 'mast_failure_mode_total{{mode="1.3",category="FC1",service="s",version="1",framework="f"}}'
        values: '0+1x10'
    promql_expr_test:
      - expr: mast:failure_objective:ratio
        eval_time: 5m
        exp_samples:
          - labels: 'mast:failure_objective:ratio{{mode="2.3"}}'
            value: 0.04
          - labels: 'mast:failure_objective:ratio{{mode="3.3"}}'
            value: 0.02
          - labels: 'mast:failure_objective:ratio{{mode="1.3"}}'
            value: 0.05
""")
    promtool = require_binary("promtool")
    done = subprocess.run([promtool, "test", "rules", "objective.test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
