"""The demo driver (what ``bash scripts/demo.sh`` runs after set-up), end to end, with the model-free rules judge.

It must end with every failure the AG2 examples were written to show labelled in some trace of that example, and
exit non-zero otherwise; the collector it started must be gone afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from examples.demo import EXAMPLES, Example, check
from mast_otel.collector.report import Conversation
from tests.viewing._support import ARTIFACTS, ROOT


def conversation(service: str, *modes: str) -> Conversation:
    return Conversation(trace_id="0" * 32, name="c", service=service, framework="ag2", status="ok", modes=modes)


def test_check_wants_each_failure_in_its_own_example() -> None:
    chat, api = (e.service for e in EXAMPLES[:2])
    # the other examples (other frameworks) show what they were written to show
    rest = [conversation(e.service, *(modes[0] for modes in e.shows)) for e in EXAMPLES[2:]]
    assert check([conversation(chat, "1.3", "1.5"), conversation(api, "3.2"), *rest]) == []
    assert check([conversation(chat, "1.3", "3.1"), conversation(api, "3.2", "1.3"), *rest]) == []  # 3.1 counts
    missing = check([conversation(chat, "1.3"), conversation(api, "1.3", "3.2"), *rest])
    assert missing == ["1.5 or 3.1 in examples/ag2_group_chat.py (labelled: 1.3)"]
    assert len(check([conversation(chat, "1.3", "1.5"), conversation("elsewhere", "3.2"), *rest])) == 1
    assert all(isinstance(e, Example) and e.shows for e in EXAMPLES)


def test_demo_labels_every_failure_the_examples_show(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAST_OTEL_JUDGE_", "OTEL_"))}
    env.pop("OPENAI_API_KEY", None)
    out = tmp_path / "demo-output"
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo", "--out", str(out), "--judge", "rules", "--timeout", "120"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "demo-output.txt").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, f"demo failed ({done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert "mast.label.source=rules" in done.stdout
    assert re.search(r"1\.3 Step repetition: evidence spans: message \w+ -> chat_manager", done.stdout)
    assert (out / "spans.jsonl").stat().st_size > 0 and (out / "report.html").exists()
    (pid,) = re.findall(r"collector stopped \(pid (\d+)", done.stdout)
    assert not Path(f"/proc/{pid}").exists(), "the collector outlived the demo"
