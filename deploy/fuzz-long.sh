#!/usr/bin/env bash
# Runs every fuzz target of the module for a longer stretch (FUZZTIME each,
# default 5m) and prints one summary line per target: package, target,
# executions, new corpus entries and the result. Exits 1 when any target
# fails; the failing input is in that package's testdata/fuzz, as go test
# leaves it. Used by `make fuzz-long`; the figures of a run go in
# docs/security.md.
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
fuzztime=${FUZZTIME:-5m}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
printf '%-52s %-32s %14s %8s %s\n' package target execs new result
for pkg in $("$go" list ./...); do
  for target in $("$go" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    if "$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
      result=ok
    else
      result=FAIL
      failed=1
    fi
    last=$(grep 'fuzz: elapsed' "$log" | tail -n 1)
    execs=$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$last")
    new=$(sed -n 's/.*new interesting: \([0-9]*\).*/\1/p' <<<"$last")
    printf '%-52s %-32s %14s %8s %s\n' "${pkg#github.com/corral-dev/corral/}" "$target" "${execs:-?}" "${new:-?}" "$result"
    if [ "$result" = FAIL ]; then
      sed 's/^/    /' "$log" | tail -n 30
    fi
  done
done
exit "$failed"
