#!/bin/sh
# The hunk engine against git, whole process against whole process:
# `supervisor hunks diff OLD NEW` and `git diff --no-index OLD NEW` run one
# after the other on the same pair in each iteration (a 10,000-line file
# with 100 changes; a 200,000-line file with 2,200), and the benchmark
# reports each one's processor time and the ratio, the figure to quote
# (docs/performance.md). Goal: ratio <= 1.0.
#
# Usage: deploy/bench/hunks-vs-git.sh [ITERATIONS]   (default 40)
set -eu
cd "$(dirname "$0")/../.."
n=${1:-40}
exec go test -run '^$' -bench 'ProcessVsGit' -benchtime "${n}x" -count 1 ./internal/hunkscli/
