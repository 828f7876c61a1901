// Command supervisor keeps Corral's agent sessions, each in its own runner
// process, and serves them over HTTP ("supervisor serve"); its other
// subcommands are the command-line client of a running supervisor, plus
// the tools of the permission gate, the hunk engine and the fake model
// server.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/corral-dev/corral/internal/cli"
	"github.com/corral-dev/corral/internal/fakemodelcli"
	"github.com/corral-dev/corral/internal/gatecli"
	"github.com/corral-dev/corral/internal/hunkscli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr,
		cli.External{Name: "gate", Summary: "judge a command, edit, read or fetch with the permission gate (docs/gate.md)", Main: gatecli.Main},
		cli.External{Name: "hunks", Summary: "diff files into hunks and apply chosen hunks (docs/hunks.md)", Main: hunksCommand},
		cli.External{Name: "fakemodel", Summary: "serve the fake model API for offline runs (docs/fakemodel.md)", Main: fakemodel},
	))
}

// hunksCommand runs a hunks subcommand. It runs once and exits, allocating
// in proportion to its files: collecting garbage on the way costs more than
// it frees (a tenth of a 200,000-line diff), so the collector runs only past
// a generous heap limit.
func hunksCommand(args []string, stdout, stderr io.Writer) int {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	return hunkscli.Main(args, stdout, stderr)
}

// fakemodel runs the fake model server until SIGINT or SIGTERM.
func fakemodel(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return fakemodelcli.Main(ctx, args, stdout, stderr)
}
