#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, then lint, type-check and every test tier.
#   main tier     .venv: unit tests, AG2, collector, judge, replay, examples, and the integration tests that start
#                 real servers (llama.cpp + Gemma 3 270M, Prometheus + Alertmanager, Phoenix + Chromium)
#   framework tiers  one nox session per framework whose pins clash with the main environment's (noxfile.py)
# Extra arguments go to the main tier's pytest (e.g. `-m "not integration"` for the fast tiers only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
bash scripts/setup-system.sh
bash scripts/setup-phoenix.sh
bash scripts/setup-go-tools.sh  # Jaeger + the front-tier OpenTelemetry Collector, built once per machine
VENV=${MAST_OTEL_VENV:-$(pwd)/.venv}

echo "[test] ruff"
"$VENV/bin/ruff" check .
echo "[test] mypy"
"$VENV/bin/mypy" mast_otel
echo "[test] pytest (main tier)"
set +e
"$VENV/bin/pytest" -q -rs "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "[test] pytest collected no tests: failing on purpose" >&2
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
echo "[test] framework tiers (nox)"
export MAST_OTEL_MAIN_PYTHON="$VENV/bin/python"
"$VENV/bin/nox" --no-color -f noxfile.py
