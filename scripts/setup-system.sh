#!/usr/bin/env bash
# System packages the integration tier needs: Prometheus + Alertmanager (alerting e2e) and Chromium (Phoenix UI
# screenshot). Debian/Ubuntu only. Idempotent: when every binary is already on PATH it installs nothing and
# never calls apt-get. Needs root (or passwordless sudo) only when something is missing.
set -euo pipefail

# binary -> Debian package
declare -A PACKAGES=(
  [prometheus]=prometheus
  [promtool]=prometheus
  [prometheus-alertmanager]=prometheus-alertmanager
  [amtool]=prometheus-alertmanager
  [chromium]=chromium
)

missing=()
for bin in "${!PACKAGES[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("${PACKAGES[$bin]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[setup-system] prometheus, promtool, prometheus-alertmanager, amtool, chromium: present"
  exit 0
fi
# de-duplicate, stable order
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if ! command -v apt-get >/dev/null 2>&1; then
  echo "[setup-system] missing ${missing[*]} and no apt-get here: install them with your package manager" >&2
  exit 1
fi
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); else
    echo "[setup-system] missing ${missing[*]}; run as root (or install them): apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

echo "[setup-system] installing ${missing[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
# Services are not started on install (no systemd here); tests run the binaries in the foreground themselves.
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"

for bin in "${!PACKAGES[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || { echo "[setup-system] $bin still missing after install" >&2; exit 1; }
done
echo "[setup-system] done"
