#!/usr/bin/env bash
# Builds the llama-cpp-python wheel that the local-llm extra needs, once per machine, and prints its folder.
#
# PyPI has only the sdist, and llama.cpp's default build compiles for the build machine's CPU (-march=native):
# AVX-512 or AMX chosen there die with SIGILL on the next machine, or on a VM that hides them. So the build names
# a fixed instruction-set level instead, from the x86-64 psABI levels:
#   x86-64-v3  AVX, AVX2, FMA, F16C, BMI2 (every x86-64 server CPU since about 2015): when this CPU has them
#   x86-64-v2  SSE4.2 only: otherwise
# and never AVX-512 or AMX. Another architecture gets llama.cpp's generic build (GGML_NATIVE=OFF).
# The wheel is kept in ${XDG_CACHE_HOME:-~/.cache}/mast-otel/wheels/llama-cpp-python-<version>-<level>/, so a
# second run of the test command, another clone or CI on the same machine installs it without building.
# Needs cmake and a C/C++ compiler: installed with apt-get when missing (as root).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}  # setup-env.sh passes the venv's interpreter (the wheel is py3-none: ctypes, no ABI)

version=$(sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
if [ -z "$version" ]; then
  echo "[llama] no llama-cpp-python pin found in pyproject.toml" >&2
  exit 1
fi

cmake_args=(-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF)
arch=$(uname -m)
if [ "$arch" = "x86_64" ]; then
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  level=x86-64-v3
  for f in avx avx2 fma f16c bmi2; do
    [[ "$flags" == *" $f "* ]] || level=x86-64-v2
  done
  cmake_args+=(-DGGML_SSE42=ON -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
               -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  if [ "$level" = "x86-64-v3" ]; then
    cmake_args+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  else
    cmake_args+=(-DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF)
  fi
else
  level="generic-$arch"
fi

cache=${XDG_CACHE_HOME:-$HOME/.cache}/mast-otel/wheels
dest="$cache/llama-cpp-python-$version-$level"
if ls "$dest"/llama_cpp_python-"$version"-*.whl >/dev/null 2>&1; then
  echo "$dest"
  exit 0
fi

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(build-essential)
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
    echo "[llama] missing: ${missing[*]}; install them (apt-get install ${missing[*]}) and re-run" >&2
    exit 1
  fi
  echo "[llama] apt-get install ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "[llama] building llama-cpp-python $version for $level (once per machine, about 5 minutes on 2 cores)" >&2
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# --no-cache-dir: pip's own wheel cache is keyed by the sdist alone and may hold a -march=native build.
if ! CMAKE_ARGS="${cmake_args[*]}" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$PY" -m pip wheel -q --no-cache-dir --no-deps --no-binary llama-cpp-python \
    -w "$work" "llama-cpp-python==$version" >"$work/log" 2>&1; then
  tail -40 "$work/log" >&2
  echo "[llama] the llama-cpp-python build failed (above)" >&2
  exit 1
fi
mkdir -p "$cache"
rm -rf "$dest.tmp" && mkdir "$dest.tmp" && mv "$work"/*.whl "$dest.tmp/"
echo "$level: CMAKE_ARGS=${cmake_args[*]}" > "$dest.tmp/BUILD"
mv "$dest.tmp" "$dest"  # whole or absent: a build cut short leaves no wheel to reuse
echo "[llama] built in $(( $(date +%s) - start )) s: $dest" >&2
echo "$dest"
