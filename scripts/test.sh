#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, then lint, type-check and every test tier, side by
# side on every core (scripts/tiers.py says which job needs which and which must run alone):
#   main tier     .venv: unit tests, AG2, collector, judge, replay, examples, and the integration tests that start
#                 real servers (llama.cpp + Gemma 3 270M, Prometheus + Alertmanager, Phoenix + Chromium, Jaeger, the
#                 Collector); the tests marked `alone` (they measure time or memory) run after, with nothing beside
#   fresh clone   a `git clone` of HEAD in a temporary folder with no ../shared beside it (what a new user gets),
#                 reusing .venv: the repository must carry every file its tests need (scripts/fresh-clone.sh)
#   framework tiers  one nox session per framework whose pins clash with the main environment's (noxfile.py)
#   mutation sample  a seeded sample of mutants of the modules users rely on must be killed
# Each job's log is test-artifacts/tiers/<job>.log. Extra arguments go to the main tier's pytest (e.g.
# `-m "not integration"` for the fast tiers only).
set -euo pipefail
cd "$(dirname "$0")/.."
run_start=$(date +%s)
step_start=$run_start
step() {  # step NAME: closes the previous step with its time, so a cold run's log says where the minutes went
  local now
  now=$(date +%s)
  echo "[test] (previous step: $((now - step_start)) s; total $((now - run_start)) s) $1"
  step_start=$now
}
# Set-up that only the tests need runs beside the rest: the Go build and Phoenix start now, in the background, and
# the jobs of the same names in scripts/tiers.py wait for them (each script takes a lock: a second run waits for
# the first, then finds everything built). apt-get first and alone (one dpkg lock).
step "setup-system"
bash scripts/setup-system.sh
mkdir -p test-artifacts/tiers
background=()
bash scripts/setup-go-tools.sh >test-artifacts/tiers/setup-go-tools.background.log 2>&1 &
background+=($!)
bash scripts/setup-phoenix.sh >test-artifacts/tiers/setup-phoenix.background.log 2>&1 &
background+=($!)
trap 'kill "${background[@]}" 2>/dev/null || true' EXIT
step "setup-env (.venv; llama-cpp-python built once per machine)"
bash scripts/setup-env.sh
if [ "${CI:-}" = "true" ]; then
  # CI has ../shared: the tests on the full MAST data must run there, not skip.
  export MAST_OTEL_REQUIRE_FULL_DATA=1
fi
# Before any test writes a file: is this checkout exactly HEAD? Then the main tier runs on the files a fresh clone
# gets, and the fresh-clone job runs only what differs (scripts/fresh-clone.sh).
if [ -z "$(git status --porcelain --untracked-files=all)" ]; then
  export MAST_OTEL_TREE_CLEAN=1
fi
step "every job side by side (scripts/tiers.py): lint, the main tier, the fresh clone, the frameworks, mutation"
python3 scripts/tiers.py "$@"
step "done"
