#!/usr/bin/env bash
# Installs the pinned npm packages of a folder (its package.json and
# package-lock.json) into its node_modules, with npm ci. Idempotent: a stamp
# of the lock file's hash skips the install when nothing changed.
#   deploy/npm-ci.sh clients/typescript
set -euo pipefail
dir=${1:?usage: npm-ci.sh FOLDER}
cd "$dir"
stamp=node_modules/.corral-stamp
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm-ci.sh: npm is needed to install $dir's packages (Node.js 20 or newer)" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
