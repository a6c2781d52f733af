#!/usr/bin/env bash
# The mast-otel demo, on a fresh machine: sets up .venv (scripts/setup-env.sh), then runs examples/demo.py:
# instrumented AG2 chats (offline, scripted) -> mast-otel collector -> judge -> labelled spans in a local trace
# backend, a table of the labels and their evidence, the metrics and an HTML report (demo-output/ by default).
# Exits non-zero unless each signal the examples were built to raise was raised (and, with a judge, each failure
# mode they were written to show was labelled). Without a model: structural signals only, no MAST labels.
#   bash scripts/demo.sh [--out DIR] [--judge auto|signals|llm] [--timeout SECONDS]
# The LLM judge is used when MAST_OTEL_JUDGE_BASE_URL / MAST_OTEL_JUDGE_MODEL or OPENAI_API_KEY is set.
set -euo pipefail
cd "$(dirname "$0")/.."
# The demo needs no local LLM: skip the llama.cpp extra (and its build) unless the caller asks for it.
MAST_OTEL_EXTRAS=${MAST_OTEL_EXTRAS:-ag2,collector,judge} bash scripts/setup-env.sh
VENV=${MAST_OTEL_VENV:-$(pwd)/.venv}
# Frameworks whose pins clash with the main environment's run their demo example in their nox environment.
DEMO_SESSIONS=(openai_agents ag2_1x autogen_agentchat)
if [ ${#DEMO_SESSIONS[@]} -gt 0 ] && ! "$VENV/bin/python" -c "import nox" 2>/dev/null; then
  "$VENV/bin/pip" install -q "nox>=2024.10" "uv>=0.4"  # the dev extra's, without the rest of it
fi
for session in "${DEMO_SESSIONS[@]}"; do
  "$VENV/bin/nox" --no-color -s "$session" --install-only
done
exec "$VENV/bin/python" -m examples.demo "$@"
