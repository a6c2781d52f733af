#!/usr/bin/env bash
# Creates/updates .venv-phoenix: Arize Phoenix (a real OTLP trace store with a UI and a REST API) and Playwright
# (driving the system Chromium; no browser download). Phoenix is about 850 MB with pandas/pyarrow, so it lives in
# its own venv, never in .venv. Idempotent: a second run only checks.
#   PHOENIX_VENV       where (default .venv-phoenix in the repo root)
#   PHOENIX_SPEC       pip requirement for Phoenix (default the version tested here)
#   PLAYWRIGHT_SPEC    pip requirement for Playwright
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${PHOENIX_VENV:-$(pwd)/.venv-phoenix}
PY=${PYTHON:-python3}
PHOENIX_SPEC=${PHOENIX_SPEC:-arize-phoenix==20.26.1}
PLAYWRIGHT_SPEC=${PLAYWRIGHT_SPEC:-playwright==1.65.2}

# One installer at a time (scripts/test.sh starts this in the background; a second run waits, then finds it done).
mkdir -p "$VENV"
exec 9>"$VENV/.mast-otel.lock"
flock 9
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup-phoenix] creating $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi

stamp="$VENV/.mast-otel-phoenix"
want="$PHOENIX_SPEC $PLAYWRIGHT_SPEC"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup-phoenix] installing $PHOENIX_SPEC $PLAYWRIGHT_SPEC (about a minute the first time)"
  # `playwright install` is never run: tests launch the system Chromium (executable_path).
  "$VENV/bin/pip" install -q "$PHOENIX_SPEC" "$PLAYWRIGHT_SPEC"
  "$VENV/bin/phoenix" --help >/dev/null
  "$VENV/bin/python" -c "import playwright.sync_api" >/dev/null
  echo "$want" > "$stamp"
fi
echo "[setup-phoenix] ready: $VENV/bin/phoenix"
