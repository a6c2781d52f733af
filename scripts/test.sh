#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, then lint, type-check and every test tier.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
VENV=${MAST_OTEL_VENV:-$(pwd)/.venv}

echo "[test] ruff"
"$VENV/bin/ruff" check .
echo "[test] mypy"
"$VENV/bin/mypy" mast_otel
echo "[test] pytest"
set +e
"$VENV/bin/pytest" -q -rs "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "[test] pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$rc"
