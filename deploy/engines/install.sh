#!/usr/bin/env bash
# Installs the pinned agent CLIs (package.json / package-lock.json beside this
# script) into deploy/engines/node_modules. Idempotent: a stamp of the lock
# file's hash skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.corral-stamp
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install.sh: npm is needed to install the agent CLIs (Node.js 20 or newer)" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
