#!/usr/bin/env bash
# The fresh-clone check: what a new user gets, a `git clone` of HEAD with no ../shared beside it, carries every file
# its tests need, and its tests pass without the full data.
#
# It runs only what the main tier did not already prove. When the checkout the main tier ran in is clean
# (MAST_OTEL_TREE_CLEAN=1, set by scripts/test.sh before any test: nothing modified, nothing untracked; .gitignore
# lists only what set-up and the tests make), the main tier ran on exactly HEAD's files, so here:
#   - every test module is collected in the clone (each imports from committed files only);
#   - the fast tests of the modules that read ../shared (or the helpers that do: tests/mad_data.py,
#     tests/viewing/_support.py) run in the clone, where ../shared is absent: they skip with the reason, or pass
#     on the sample data in tests/data, and never fail for want of the full data.
# When the checkout is not clean (a developer's uncommitted work), the main tier proved nothing about HEAD's
# files: the whole fast tier runs in the clone, as before.
# Runs from .venv (its editable install is of this checkout: the clone's own code is put first on PYTHONPATH).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${MAST_OTEL_VENV:-$(pwd)/.venv}
clone_parent=$(mktemp -d)
trap 'rm -rf "$clone_parent"' EXIT
git -c advice.detachedHead=false clone -q --no-local "$(pwd)" "$clone_parent/mast-otel"
cd "$clone_parent/mast-otel"
run() {  # the clone's code, not this checkout's; no full-data paths
  env -u MAST_OTEL_MAST_DATA -u MAST_OTEL_REQUIRE_FULL_DATA -u MAST_OTEL_WHOWHEN_DATA \
    PYTHONPATH="$clone_parent/mast-otel" "$@"
}
run "$VENV/bin/python" -c 'import mast_otel, sys; sys.exit(not mast_otel.__file__.startswith(sys.argv[1]))' \
  "$clone_parent/mast-otel/" || { echo "[fresh-clone] the clone does not import its own mast_otel" >&2; exit 1; }
if [ "${MAST_OTEL_TREE_CLEAN:-0}" != "1" ]; then
  echo "[fresh-clone] the checkout differs from HEAD: the whole fast tier runs in the clone"
  run "$VENV/bin/pytest" -q -rs -p no:cacheprovider -m "not integration"
  exit
fi
echo "[fresh-clone] the checkout is HEAD: collecting every test, then running the modules that read ../shared"
run "$VENV/bin/pytest" -q -p no:cacheprovider --collect-only >/dev/null \
  || { run "$VENV/bin/pytest" -q -p no:cacheprovider --collect-only | tail -30; exit 1; }
# Modules that name ../shared (or its variables) themselves, and those that import a helper that does.
mapfile -t readers < <(git grep -l -E '"shared"|\.\./shared|MAST_OTEL_(MAST|WHOWHEN)_DATA' -- 'tests/*.py')
helpers=()
modules=()
for f in "${readers[@]}"; do
  case "$(basename "$f")" in
    test_*.py) modules+=("$f") ;;
    *) helpers+=("$(basename "$f" .py)") ;;
  esac
done
if [ ${#helpers[@]} -gt 0 ]; then
  pattern=$(IFS='|'; echo "${helpers[*]}")
  mapfile -t -O "${#modules[@]}" modules < <(git grep -l -E "import ($pattern)\b|\.($pattern) import" -- 'tests/*test_*.py')
fi
mapfile -t modules < <(printf '%s\n' "${modules[@]}" | sort -u)
echo "[fresh-clone] ${#modules[@]} modules read ../shared: ${modules[*]}"
run "$VENV/bin/pytest" -q -rs -p no:cacheprovider -m "not integration" "${modules[@]}"
