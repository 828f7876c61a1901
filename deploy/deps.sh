#!/usr/bin/env bash
# Installs the Debian packages the tests use, when they are missing.
# Idempotent: nothing is installed when every command is already there.
set -euo pipefail
need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v ps >/dev/null 2>&1 || need+=(procps)
# The shell completion scripts are tested in the shells they are for.
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
# The docs' examples (internal/docexamples) call the API with curl.
command -v curl >/dev/null 2>&1 || need+=(curl)
# The web console's browser tests drive Debian's Chromium (playwright-core).
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing ${need[*]}; install them (as root: apt-get install ${need[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
