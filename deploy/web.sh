#!/usr/bin/env bash
# Builds the web console: installs the pinned front-end toolchain
# (web/package-lock.json) into web/node_modules, type-checks and bundles
# web/src, and puts the bundle where the supervisor's binary embeds it
# (internal/console/dist). Idempotent: a stamp of the lock file's hash skips
# the install, and a stamp of the sources' hash skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
web=$root/web
out=$root/internal/console/dist
if ! command -v npm >/dev/null 2>&1; then
  echo "web.sh: npm is needed to build the console (Node.js 20 or newer)" >&2
  exit 1
fi
cd "$web"
stamp=node_modules/.corral-stamp
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
# The build's inputs: sources, config, the lock file, and the TypeScript
# client (clients/typescript, a local package bundled from its sources).
sources=$(cd "$root" && find web/src web/index.html web/package-lock.json web/tsconfig.json web/vite.config.ts \
  clients/typescript/src clients/typescript/package.json -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
built=$out/.corral-build
if [ -f "$built" ] && [ "$(cat "$built")" = "$sources" ] && [ -f "$out/index.html" ]; then
  exit 0
fi
npx --no-install tsc --noEmit -p .
npx --no-install vite build --logLevel warn --outDir "$web/dist" --emptyOutDir
# Replace the embedded build, keeping the folder's .gitignore (which also
# gives go:embed a file to find on a clone where the console is not built).
find "$out" -mindepth 1 ! -name .gitignore -delete
cp -R "$web/dist/." "$out/"
echo "$sources" > "$built"
