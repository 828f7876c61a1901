// Command runner runs one Corral session on a built-in engine (script,
// claude, codex, copilot, acp). See internal/runnercmd for its flags and modes;
// sessions on plugin engines run in plugin-runner instead.
package main

import (
	"os"

	"github.com/corral-dev/corral/internal/runnercmd"
)

func main() {
	os.Exit(runnercmd.Main("runner", os.Args[1:], runnercmd.Builtin()))
}
