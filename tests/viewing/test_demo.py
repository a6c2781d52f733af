"""The demo driver (what ``bash scripts/demo.sh`` runs after set-up), end to end.

Without a model it must show the structural signals each AG2 example was built to raise, no MAST labels, and one
line on how to get them; with a judge (the collector's LLM judge against a scripted OpenAI-compatible server that
answers a valid verdict: plumbing, not quality) it must show the labels. It exits non-zero otherwise, and the
collector it started must be gone afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from examples.demo import EXAMPLES, Example, check, check_signals, runnable
from examples.scripted_openai import ScriptedOpenAI
from mast_otel.collector.report import Conversation
from tests.judge.fake_openai import answer
from tests.viewing._support import ARTIFACTS, ROOT


def conversation(service: str, *modes: str, signals: tuple[str, ...] = ()) -> Conversation:
    return Conversation(trace_id="0" * 32, name="c", service=service, framework="ag2", status="ok", modes=modes,
                        signals=signals)  # fmt: skip


def test_check_wants_each_failure_in_its_own_example() -> None:
    chat, api = (e.service for e in EXAMPLES[:2])
    # the other examples (other frameworks) show what they were written to show
    rest = [conversation(e.service, *(modes[0] for modes in e.shows)) for e in EXAMPLES[2:]]
    assert check([conversation(chat, "1.3", "1.5"), conversation(api, "3.2"), *rest]) == []
    assert check([conversation(chat, "1.3", "3.1"), conversation(api, "3.2", "1.3"), *rest]) == []  # 3.1 counts
    missing = check([conversation(chat, "1.3"), conversation(api, "1.3", "3.2"), *rest])
    assert missing == ["1.5 or 3.1 in examples/ag2_group_chat.py (labelled: 1.3)"]
    assert len(check([conversation(chat, "1.3", "1.5"), conversation("elsewhere", "3.2"), *rest])) == 1
    assert all(isinstance(e, Example) and e.shows and e.raises for e in EXAMPLES)


def test_check_signals_wants_each_signal_in_its_own_example() -> None:
    chat, api = (e.service for e in EXAMPLES[:2])
    rest = [conversation(e.service, signals=e.raises) for e in EXAMPLES[2:]]  # other frameworks' examples
    ok = [conversation(chat, signals=("repeated_message", "round_limit")),
          conversation(api, signals=("unchecked_approval",)), *rest]  # fmt: skip
    assert check_signals(ok) == []
    missing = check_signals([conversation(chat, signals=("round_limit",)),
                             conversation(api, signals=("unchecked_approval", "repeated_message")), *rest])  # fmt: skip
    assert missing == ["repeated_message in examples/ag2_group_chat.py (raised: round_limit)"]


def run_demo(tmp_path: Path, name: str, judge: str, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAST_OTEL_JUDGE_", "OTEL_"))}
    env.pop("OPENAI_API_KEY", None)
    env.update(extra_env)
    out = tmp_path / "demo-output"
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo", "--out", str(out), "--judge", judge, "--timeout", "120"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"demo-output-{name}.txt").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, f"demo failed ({done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert (out / "spans.jsonl").stat().st_size > 0 and (out / "report.html").exists()
    # the pattern report of its own runs, and the history it came from, kept for mast-otel report --history
    assert "Patterns across runs" in done.stdout and (out / "patterns.html").read_text().startswith("<!doctype html>")
    assert (out / "collector.db.history").stat().st_size > 0
    (pid,) = re.findall(r"collector stopped \(pid (\d+)", done.stdout)
    assert not Path(f"/proc/{pid}").exists(), "the collector outlived the demo"
    return done


def test_demo_without_a_model_shows_signals_and_no_labels(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "signals", "auto", {})
    assert "mast.judge.status=skipped" in done.stdout and "mast.failure_modes" not in done.stdout
    assert re.search(r"repeated_message \(hints at 1\.3 Step repetition\): spans message \w+ -> chat_manager",
                     done.stdout)  # fmt: skip
    assert "unchecked_approval (hints at 3.2" in done.stdout and "round_limit (hints at 1.5" in done.stdout
    assert re.search(r'mast_signal_total\{.*signal="round_limit".*\} 1\.0', done.stdout)
    assert "For MAST labels, give the collector a judge: set OPENAI_API_KEY" in done.stdout
    # no judge: every verdict skipped, no pattern; the report says what it read
    assert re.search(r": (\d+) verdicts, 0 judged \(ok, partial, truncated\); not judged: skipped \1 \(100%\)",
                     done.stdout)  # fmt: skip
    assert "No failure mode in this window." in done.stdout


def test_demo_judge_path_against_a_scripted_openai_server(tmp_path: Path) -> None:
    verdict = answer({"1.3": ["M1"], "1.5": ["M2"], "3.2": ["M1"]}, summary="scripted verdict")
    with ScriptedOpenAI({"rules": [], "default": verdict}) as server:
        done = run_demo(tmp_path, "llm", "auto",
                        {"MAST_OTEL_JUDGE_BASE_URL": server.base_url, "MAST_OTEL_JUDGE_MODEL": "scripted-judge"})
        judge_calls = [r for r in server.requests if r.path.endswith("/chat/completions")]
    # the collector's LLM judge called the server for each conversation (of the examples whose environment exists)
    assert len(judge_calls) >= len(runnable(EXAMPLES))
    assert "judge: LLM judge (scripted-judge at http://127.0.0.1:" in done.stdout
    assert done.stdout.count("mast.judge.status=ok  mast.label.source=llm") >= len(runnable(EXAMPLES))
    assert "mast.failure_modes=[1.3, 1.5, 3.2]" in done.stdout
    assert re.search(r'mast_failure_mode_total\{.*mode="1\.3".*\} [1-9]', done.stdout)
    assert "every failure they were written to show was labelled" in done.stdout
    # every judged conversation shows 1.3 (the scripted verdict): its rate is all of them, everywhere and per version
    all_rows = re.search(r"1\.3\s+Step repetition\s+all\s+100\.0% \((\d+)/(\d+)\)", done.stdout)
    assert all_rows and all_rows.group(1) == all_rows.group(2) and int(all_rows.group(1)) >= len(runnable(EXAMPLES))
    assert re.search(r"1\.3\s+Step repetition\s+service=demo-ag2-group-chat version=demo-1\s+100\.0%", done.stdout)
