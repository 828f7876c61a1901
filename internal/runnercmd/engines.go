package runnercmd

import (
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/engines/acp"
	"github.com/corral-dev/corral/internal/engines/claude"
	"github.com/corral-dev/corral/internal/engines/codex"
	"github.com/corral-dev/corral/internal/engines/copilot"
	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/engine"
)

// Builtin returns the engines built into Corral; wire.BuiltinEngine names
// the same set for the supervisor, which does not link them.
func Builtin() map[string]engine.Factory {
	return map[string]engine.Factory{
		"script":  script.New,
		"claude":  claude.New,
		"codex":   codex.New,
		"copilot": copilot.New,
		"acp":     acp.New,
	}
}

// goldenReplays are the engines whose golden turn a runner replays on the
// installed CLI (runner --replay, supervisor doctor engines).
func goldenReplays() map[string]engineprobe.Replay {
	return map[string]engineprobe.Replay{
		"claude":  claude.ReplayGolden,
		"codex":   codex.ReplayGolden,
		"copilot": copilot.ReplayGolden,
	}
}

func engineNames(engines map[string]engine.Factory) string {
	var names []string
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// newTerminals returns the session's terminal hub. Its clients are the
// supervisor's, one per terminal, each fanning out to any number of
// viewers; a link that falls behind paces the program rather than cutting
// every viewer at once.
func newTerminals(opts runner.Options, log *zap.Logger) *runner.Terminals {
	return runner.NewTerminals(term.NewHub(term.HubOptions{Env: opts.Env, Logger: log.Named("term"), Pace: true}))
}
