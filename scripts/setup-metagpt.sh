#!/usr/bin/env bash
# Creates/updates the MetaGPT 0.8.2 virtual environment (.venv-metagpt): MetaGPT, mast-otel (editable, core
# dependencies only) and the test harness. Idempotent: a second run only checks. See docs/metagpt.md.
#
# MetaGPT needs its own environment: its exact pins (pydantic < 2.10, openai 1.39, ...) clash with AG2's, and a
# plain `pip install metagpt==0.8.2` does not resolve. The recipe (constraints/ explains each file):
#   1. metagpt==0.8.2 with --no-deps, then its core list (metagpt-0.8.2-requirements.txt) pinned by the lock
#      (metagpt-0.8.2.txt);
#   2. mast-otel's core dependencies and pytest, exactly pinned, with --no-deps (metagpt-0.8.2-overlay.txt):
#      OpenTelemetry needs protobuf >= 5, which MetaGPT's Gemini SDK pin refuses in one resolution;
#   3. mast-otel itself, editable, with --no-deps.
#
# Environment:
#   MAST_OTEL_METAGPT_VENV  where the environment goes (default: .venv-metagpt in the repository)
#   PYTHON                  the interpreter to build it from (default: python3.11; MetaGPT needs >=3.9,<3.12)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${MAST_OTEL_METAGPT_VENV:-$ROOT/.venv-metagpt}
PY=${PYTHON:-python3.11}
REQS=constraints/metagpt-0.8.2-requirements.txt
LOCK=constraints/metagpt-0.8.2.txt
OVERLAY=constraints/metagpt-0.8.2-overlay.txt

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup-metagpt] creating $VENV with $("$PY" --version 2>&1)"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
fi
# Keep the environment out of git without touching the repository's .gitignore.
[ -f "$VENV/.gitignore" ] || echo "*" > "$VENV/.gitignore"

stamp="$VENV/.mast-otel-metagpt-installed"
want="$(cat "$REQS" "$LOCK" "$OVERLAY" pyproject.toml scripts/setup-metagpt.sh | sha256sum | cut -c1-16)"
present='import importlib.util as u, sys; sys.exit(not (u.find_spec("metagpt") and u.find_spec("mast_otel")))'
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$VENV/bin/python" -c "$present"; then
  echo "[setup-metagpt] $VENV is up to date"
  exit 0
fi

pipq() {
  # Quiet on success: pip's only complaints then are metagpt's own unsatisfiable pins (expected, see above) and
  # setuptools' notes on editable installs. Everything is shown on failure.
  local log rc=0
  log=$("$VENV/bin/pip" install -q "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "$log" | grep -v "^WARNING: Location" >&2
  fi
  return "$rc"
}

echo "[setup-metagpt] installing metagpt==0.8.2 (--no-deps) and its core list"
pipq --no-deps "metagpt==0.8.2"
pipq -r "$REQS" -c "$LOCK"
echo "[setup-metagpt] installing mast-otel's core dependencies and pytest (--no-deps, $OVERLAY)"
pipq --no-deps -r "$OVERLAY"
echo "[setup-metagpt] installing mast-otel (editable, --no-deps)"
pipq --no-deps -e "$ROOT"

# MetaGPT reads its config at import time; check the import with a throwaway one (quiet unless it fails).
check_root=$(mktemp -d)
mkdir -p "$check_root/config"
printf 'llm: {api_type: "openai", base_url: "http://127.0.0.1:9/v1", api_key: "x", model: "gpt-4"}\n' \
  > "$check_root/config/config2.yaml"
check_rc=0
check_out=$(METAGPT_PROJECT_ROOT="$check_root" "$VENV/bin/python" - 2>&1 <<'PY'
import metagpt.team, metagpt.provider.llm_provider_registry  # noqa: F401
import pydantic, mast_otel, mast_otel.integrations.metagpt  # noqa: F401
from importlib.metadata import version
print(f"[setup-metagpt] ok: metagpt {version('metagpt')}, pydantic {pydantic.VERSION}, mast-otel {mast_otel.__version__}")
PY
) || check_rc=$?
rm -rf "$check_root"
if [ "$check_rc" -ne 0 ]; then
  printf '%s\n' "$check_out" >&2
  echo "[setup-metagpt] MetaGPT does not import in $VENV" >&2
  exit 1
fi
printf '%s\n' "$check_out" | grep "^\[setup-metagpt\]"
echo "$want" > "$stamp"
