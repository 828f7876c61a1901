#!/usr/bin/env bash
# make run: a supervisor in a temporary state folder, a demo session on the
# script engine (no API key), and `supervisor watch` on it, so a newcomer
# sees and answers a real review within seconds. Everything is removed when
# the watch ends (q or Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/bin
state=$(mktemp -d -t corral-demo-XXXXXX)
worktree=$state/worktree
mkdir -p "$worktree"
export CORRAL_STATE=$state

cleanup() {
  if [ -n "${console:-}" ]; then
    kill -TERM "$console" 2>/dev/null || true
    wait "$console" 2>/dev/null || true
  fi
  if [ -n "${daemon:-}" ]; then
    kill -TERM "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  rm -rf "$state"
}
trap cleanup EXIT INT TERM

# The demo's state folder goes with it: so do its runners (by default a
# session with work under way would wait for the next supervisor).
"$bin/supervisor" serve --state "$state" --stop-runners-on-exit 2>"$state/supervisor.log" &
daemon=$!
for _ in $(seq 1 100); do
  [ -S "$state/supervisor.sock" ] && break
  sleep 0.05
done
[ -S "$state/supervisor.sock" ] || { echo "the supervisor did not start; its log:" >&2; cat "$state/supervisor.log" >&2; exit 1; }

id=$("$bin/supervisor" new --engine script --cwd "$worktree")
"$bin/supervisor" goal "$id" set "hello.txt exists; it holds a greeting" >/dev/null
"$bin/supervisor" send "$id" "Create hello.txt, then show it." >/dev/null
# A steer while the first tool runs: delivered at the next tool boundary.
"$bin/supervisor" steer "$id" "keep the answer short" >/dev/null

# The web console on the same supervisor: a loopback listener whose link
# signs one browser in.
"$bin/supervisor" console --open=false "$id" >"$state/console.url" 2>"$state/console.log" &
console=$!
for _ in $(seq 1 100); do
  [ -s "$state/console.url" ] && break
  sleep 0.05
done

echo "Corral demo: session $id, worktree $worktree (removed on exit)."
if [ -s "$state/console.url" ]; then
  echo "Web console: $(head -n1 "$state/console.url")  (the link signs one browser in, once)"
else
  echo "The web console did not start; its log:" >&2
  cat "$state/console.log" >&2
fi
echo "Answer the ask and review the hunks below; q quits."
"$bin/supervisor" watch "$id"
