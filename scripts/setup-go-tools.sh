#!/usr/bin/env bash
# Builds the third-party Go servers the tests run for real, with the ordinary Go tooling, once per recipe:
#   jaeger              Jaeger v2 all-in-one (github.com/jaegertracing/jaeger/cmd/jaeger v1.76.0)
#   otelcol-mast-front  a small OpenTelemetry Collector distribution: OTLP receiver, memory_limiter, batch,
#                       load_balancing (by trace id) and OTLP exporters (collector/deploy/otelcol/)
#   telemetrygen        the OpenTelemetry Collector project's load generator, a standard OTLP client
#                       (github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen v0.161.0)
# The recipes are the Go modules in collector/deploy/{jaeger,otelcol,telemetrygen}/ (their go.mod/go.sum pin every
# module). The binaries go to a machine-level cache keyed by a hash of the recipes and the Go version,
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
TELEMETRYGEN_PKG=github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen

if ! command -v go >/dev/null 2>&1; then
  echo "[go-tools] no Go toolchain on PATH: install Go 1.24+ (https://go.dev/doc/install) to build Jaeger and" \
       "the Collector distribution the integration tests use" >&2
  exit 1
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}  # never fetch another toolchain behind the user's back
export GOFLAGS="${GOFLAGS:-} -mod=readonly"  # the committed go.sum is the whole truth: no silent upgrades

recipe_hash() {  # recipe_hash FILE...: the Go version, the build flags and the recipe's files
  {
    go version
    echo "build: -trimpath -ldflags=-s -w"
    for f in "$@"; do
      echo "== $f"
      cat "$f"
    done
  } | sha256sum | cut -c1-16
}

TOOLS=${MAST_OTEL_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mast-otel/tools}
# Jaeger and the distribution share one key (as before telemetrygen came); telemetrygen has its own, so that adding
# or bumping it never rebuilds the two large servers.
CACHE=$TOOLS/$(recipe_hash "$DEPLOY"/jaeger/go.mod "$DEPLOY"/jaeger/go.sum "$DEPLOY"/otelcol/go.mod \
                           "$DEPLOY"/otelcol/go.sum "$DEPLOY"/otelcol/*.go)
GEN_CACHE=$TOOLS/telemetrygen-$(recipe_hash "$DEPLOY"/telemetrygen/go.mod "$DEPLOY"/telemetrygen/go.sum)
BIN=${MAST_OTEL_TOOLS_BIN:-$ROOT/.tools/bin}
mkdir -p "$CACHE" "$GEN_CACHE" "$BIN"

build() {  # build CACHE NAME MODULE_DIR PACKAGE: atomically, so a concurrent or interrupted run never leaves half a file
  local cache=$1 name=$2 dir=$3 pkg=$4 started
  if [ -x "$cache/$name" ]; then
    return 0
  fi
  started=$(date +%s)
  echo "[go-tools] building $name from $dir (cold: several minutes on 2 cores)"
  (cd "$dir" && go build -trimpath -ldflags="-s -w" -o "$cache/.$name.$$" "$pkg")
  mv -f "$cache/.$name.$$" "$cache/$name"
  echo "[go-tools] built $name in $(( $(date +%s) - started )) s"
}

# One builder at a time per recipe (parallel runs on one machine wait, then find the binaries built).
exec 9>"$CACHE/.lock"
flock 9
build "$CACHE" jaeger "$DEPLOY/jaeger" "$JAEGER_PKG"
build "$CACHE" otelcol-mast-front "$DEPLOY/otelcol" .
build "$GEN_CACHE" telemetrygen "$DEPLOY/telemetrygen" "$TELEMETRYGEN_PKG"
flock -u 9

# The check a second run does: the binaries start and name their versions (telemetrygen: its usage).
"$CACHE/jaeger" version >/dev/null 2>&1 || { echo "[go-tools] $CACHE/jaeger does not run" >&2; exit 1; }
"$CACHE/otelcol-mast-front" components >/dev/null 2>&1 \
  || { echo "[go-tools] $CACHE/otelcol-mast-front does not run" >&2; exit 1; }
"$GEN_CACHE/telemetrygen" --help >/dev/null 2>&1 \
  || { echo "[go-tools] $GEN_CACHE/telemetrygen does not run" >&2; exit 1; }
for name in jaeger otelcol-mast-front; do
  ln -sfn "$CACHE/$name" "$BIN/$name"
done
ln -sfn "$GEN_CACHE/telemetrygen" "$BIN/telemetrygen"
echo "[go-tools] jaeger, otelcol-mast-front and telemetrygen ready in $BIN (cache $CACHE, $GEN_CACHE)"
