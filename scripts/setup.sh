#!/usr/bin/env bash
# Installs everything a fresh machine (Debian 12, Node 20, root) lacks, from
# Debian's packages and the npm registry only. Idempotent and quick when done.
#   apt:  chromium (UI tests), ripgrep (code-server's search), libkrb5-dev
#         (code-server's native build), bubblewrap (the sandbox),
#         python3-numpy + python3-scipy (the bundled tasks), python3-yaml
#         (OpenEvolve folders' config.yaml, read with PyYAML as OpenEvolve does),
#         slurmctld + slurmd + slurm-client + munge (the SLURM backend's tests
#         start a one-node cluster; Debian's policy keeps the services from starting)
#         unzip (the packaging test reads the .vsix)
#   npm:  the extension's dependencies (npm ci) and code-server 4.100.3 in
#         tools/code-server (its own lockfile)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

apt_packages=(chromium ripgrep libkrb5-dev bubblewrap python3-numpy python3-scipy python3-yaml slurmctld slurmd slurm-client munge unzip)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The extension's own dependencies, exactly as locked.
stamp=node_modules/.thetaevolve-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi

# code-server: @vscode/ripgrep downloads rg from GitHub in its postinstall;
# pre-seed its cache with Debian's rg so nothing leaves the machine.
if [ ! -x tools/code-server/node_modules/.bin/code-server ]; then
  cache=/tmp/vscode-ripgrep-cache-1.15.11
  if [ ! -f "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" ]; then
    mkdir -p "$cache/x" && cp "$(command -v rg)" "$cache/x/rg"
    tar czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$cache/x" rg
  fi
  say "installing code-server 4.100.3 into tools/code-server (a few minutes)"
  (cd tools/code-server && npm_config_yes=true npm_config_unsafe_perm=true npm ci --no-audit --no-fund --loglevel=error)
fi
say "ready"
