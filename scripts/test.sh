#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, then lint, type-check and every test tier.
#   main tier     .venv: unit tests, AG2, collector, judge, replay, examples, and the integration tests that start
#                 real servers (llama.cpp + Gemma 3 270M, Prometheus + Alertmanager, Phoenix + Chromium)
#   fresh clone   the fast tier again in a `git clone` of HEAD in a temporary folder with no ../shared beside it
#                 (what a new user gets), reusing .venv: the repository must carry every file its tests need
#   framework tiers  one nox session per framework whose pins clash with the main environment's (noxfile.py)
# Extra arguments go to the main tier's pytest (e.g. `-m "not integration"` for the fast tiers only).
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
step "setup-env (.venv; llama-cpp-python built once per machine)"
bash scripts/setup-env.sh
step "setup-system"
bash scripts/setup-system.sh
step "setup-phoenix"
bash scripts/setup-phoenix.sh
step "setup-go-tools"
bash scripts/setup-go-tools.sh  # Jaeger + the front-tier OpenTelemetry Collector, built once per machine
VENV=${MAST_OTEL_VENV:-$(pwd)/.venv}
if [ "${CI:-}" = "true" ]; then
  # CI has ../shared: the tests on the full MAST data must run there, not skip.
  export MAST_OTEL_REQUIRE_FULL_DATA=1
fi

step "ruff"
"$VENV/bin/ruff" check .
step "mypy"
"$VENV/bin/mypy" mast_otel
step "lint-imports (the layer contracts in pyproject.toml: no import runs up a layer, no cycles)"
"$VENV/bin/lint-imports"
step "framework environments (nox --install-only: the demo test runs examples in them)"
"$VENV/bin/nox" --no-color -f noxfile.py --install-only
# The integration tests talk to llama.cpp: one completion first, so a server that cannot run here is one clear
# failure naming the cause, not a connection error in each of them.
step "local model server: one completion"
"$VENV/bin/python" -m tests.llama_preflight
step "pytest (main tier)"
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
step "fresh clone of HEAD, no ../shared beside it: fast tier"
clone_parent=$(mktemp -d)
trap 'rm -rf "$clone_parent"' EXIT
git -c advice.detachedHead=false clone -q --no-local "$(pwd)" "$clone_parent/mast-otel"
(
  cd "$clone_parent/mast-otel"
  # The clone's code, not this checkout's (.venv holds an editable install of this one); no full-data paths.
  env -u MAST_OTEL_MAST_DATA -u MAST_OTEL_REQUIRE_FULL_DATA PYTHONPATH="$clone_parent/mast-otel" \
    "$VENV/bin/python" -c 'import mast_otel, sys; sys.exit(not mast_otel.__file__.startswith(sys.argv[1]))' \
    "$clone_parent/mast-otel/" || { echo "[test] the clone does not import its own mast_otel" >&2; exit 1; }
  env -u MAST_OTEL_MAST_DATA -u MAST_OTEL_REQUIRE_FULL_DATA PYTHONPATH="$clone_parent/mast-otel" \
    "$VENV/bin/pytest" -q -rs -p no:cacheprovider -m "not integration"
)
step "framework tiers (nox)"
export MAST_OTEL_MAIN_PYTHON="$VENV/bin/python"
"$VENV/bin/nox" --no-color -f noxfile.py
# A seeded sample of the mutation run (the whole run takes about an hour: docs/benchmarks.md, "Mutation testing"):
# the drawn mutants must be killed as often as the threshold says, or the tests stopped pinning what they did.
step "mutation sample (nox -s mutation -- --sample ${MAST_OTEL_MUTATION_SAMPLE:-10})"
"$VENV/bin/nox" --no-color -f noxfile.py -s mutation -- --sample "${MAST_OTEL_MUTATION_SAMPLE:-10}"
step "done"
