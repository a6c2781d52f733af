#!/usr/bin/env bash
# The MetaGPT tier, as CI runs it (scripts/test.sh calls this): creates/updates the MetaGPT virtual environment
# (.venv-metagpt, scripts/setup-metagpt.sh), then runs tests/metagpt with that environment's pytest.
#
# The llama.cpp server and the AG2 half of the transcript test run from the MAIN environment's python, named by
# MAST_OTEL_MAIN_PYTHON (default: .venv/bin/python, set up here by scripts/setup-env.sh when it cannot serve them).
# Extra arguments go to pytest, e.g. `bash scripts/test-metagpt.sh -m "not integration"` for the offline tier only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
bash scripts/setup-metagpt.sh
VENV=${MAST_OTEL_METAGPT_VENV:-$ROOT/.venv-metagpt}

if [ -z "${MAST_OTEL_MAIN_PYTHON:-}" ]; then
  MAIN=${MAST_OTEL_VENV:-$ROOT/.venv}/bin/python
  if ! "$MAIN" -c "import llama_cpp.server, autogen" 2>/dev/null; then
    bash scripts/setup-env.sh
  fi
  export MAST_OTEL_MAIN_PYTHON=$MAIN
fi
# In this environment MetaGPT must import: a broken install fails the run instead of skipping the tier.
export MAST_OTEL_REQUIRE_METAGPT=1

echo "[test-metagpt] pytest in $VENV (main python for llama.cpp and AG2: $MAST_OTEL_MAIN_PYTHON)"
set +e
"$VENV/bin/pytest" -q -rs -W "ignore::FutureWarning:google.api_core._python_version_support" tests/metagpt "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "[test-metagpt] pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$rc"
