#!/usr/bin/env bash
# Installs the pinned agent CLIs into deploy/engines/node_modules (the newest
# versions Corral supports, package.json / package-lock.json beside this
# script) and deploy/engines/oldest/node_modules (the oldest supported, which
# the engine tests run on their essential cases). Two folders, because two
# versions of one CLI in one node_modules would fight over node_modules/.bin.
# Idempotent: a stamp of each lock file's hash skips an install when nothing
# changed. oldest/ is installed with `npm install` on its lock rather than
# `npm ci`: the registry no longer serves some other platforms' optional
# packages of the older Copilot CLI, which the lock therefore leaves out, and
# `npm ci` refuses such a lock although the install it records works.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null 2>&1; then
  echo "install.sh: npm is needed to install the agent CLIs (Node.js 20 or newer)" >&2
  exit 1
fi
for dir in . oldest; do
  # A deployment copies only this folder's package files and this script
  # (docs/deploy.md, the container image): it runs the newest CLIs, and
  # the oldest, which only the tests use, is not there to install.
  if [ ! -f "$dir/package-lock.json" ]; then
    continue
  fi
  (
    cd "$dir"
    stamp=node_modules/.corral-stamp
    want=$(sha256sum package-lock.json | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
      exit 0
    fi
    if [ "$dir" = oldest ]; then
      npm install --no-audit --no-fund --loglevel=error
    else
      npm ci --no-audit --no-fund --loglevel=error
    fi
    echo "$want" > "$stamp"
  )
done
