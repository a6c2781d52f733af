#!/usr/bin/env bash
# Builds the third-party Go servers the tests run for real, with the ordinary Go tooling, once per recipe:
#   jaeger              Jaeger v2 all-in-one (github.com/jaegertracing/jaeger/cmd/jaeger v1.76.0)
#   otelcol-mast-front  a small OpenTelemetry Collector distribution: OTLP receiver, memory_limiter, batch,
#                       load_balancing (by trace id) and OTLP exporters (collector/deploy/otelcol/)
# The recipes are the Go modules in collector/deploy/jaeger/ and collector/deploy/otelcol/ (their go.mod/go.sum pin
# every module). The binaries go to a machine-level cache keyed by a hash of the recipes and the Go version,
#   ${MAST_OTEL_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mast-otel/tools}/<hash>/
# so a fresh clone on the same machine (CI) reuses them, and are linked into the project-local tools folder
#   ${MAST_OTEL_TOOLS_BIN:-.tools/bin}/
# which is where the tests look. Idempotent: a second run only checks the cached binaries and the links.
# Needs `go` (1.24+) on PATH and the Go module proxy; Go's own module and build caches (GOMODCACHE, GOCACHE) stay
# at their usual places and are warm after the first run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEPLOY=mast_otel/collector/deploy
JAEGER_PKG=github.com/jaegertracing/jaeger/cmd/jaeger

if ! command -v go >/dev/null 2>&1; then
  echo "[go-tools] no Go toolchain on PATH: install Go 1.24+ (https://go.dev/doc/install) to build Jaeger and" \
       "the Collector distribution the integration tests use" >&2
  exit 1
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}  # never fetch another toolchain behind the user's back
export GOFLAGS="${GOFLAGS:-} -mod=readonly"  # the committed go.sum is the whole truth: no silent upgrades

recipe_hash() {
  {
    go version
    echo "build: -trimpath -ldflags=-s -w"
    for f in "$DEPLOY"/jaeger/go.mod "$DEPLOY"/jaeger/go.sum "$DEPLOY"/otelcol/go.mod "$DEPLOY"/otelcol/go.sum \
             "$DEPLOY"/otelcol/*.go; do
      echo "== $f"
      cat "$f"
    done
  } | sha256sum | cut -c1-16
}

HASH=$(recipe_hash)
CACHE=${MAST_OTEL_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mast-otel/tools}/$HASH
BIN=${MAST_OTEL_TOOLS_BIN:-$ROOT/.tools/bin}
mkdir -p "$CACHE" "$BIN"

build() {  # build NAME MODULE_DIR PACKAGE: atomically, so a concurrent or interrupted run never leaves half a file
  local name=$1 dir=$2 pkg=$3 started
  if [ -x "$CACHE/$name" ]; then
    return 0
  fi
  started=$(date +%s)
  echo "[go-tools] building $name from $dir (cold: several minutes on 2 cores)"
  (cd "$dir" && go build -trimpath -ldflags="-s -w" -o "$CACHE/.$name.$$" "$pkg")
  mv -f "$CACHE/.$name.$$" "$CACHE/$name"
  echo "[go-tools] built $name in $(( $(date +%s) - started )) s"
}

# One builder at a time per recipe (parallel runs on one machine wait, then find the binaries built).
exec 9>"$CACHE/.lock"
flock 9
build jaeger "$DEPLOY/jaeger" "$JAEGER_PKG"
build otelcol-mast-front "$DEPLOY/otelcol" .
flock -u 9

# The check a second run does: both binaries start and name their versions.
"$CACHE/jaeger" version >/dev/null 2>&1 || { echo "[go-tools] $CACHE/jaeger does not run" >&2; exit 1; }
"$CACHE/otelcol-mast-front" components >/dev/null 2>&1 \
  || { echo "[go-tools] $CACHE/otelcol-mast-front does not run" >&2; exit 1; }
for name in jaeger otelcol-mast-front; do
  ln -sfn "$CACHE/$name" "$BIN/$name"
done
echo "[go-tools] jaeger and otelcol-mast-front ready in $BIN (cache $CACHE)"
