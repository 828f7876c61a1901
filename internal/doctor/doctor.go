// Package doctor checks that a machine can run a supervisor: the state
// folder's owner and mode, free disk under it, the runner, the agent CLIs
// and their versions, the credentials the engines need, and the fleet's
// NATS servers. Each check says what it found and, when something is
// wrong, what to do about it. `supervisor doctor` prints them;
// `supervisor doctor engines` checks the engines alone, and replays each
// one's golden turn on its installed CLI.
package doctor

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/engines/versions"
)

// Status is a check's verdict.
type Status string

// Verdicts. Only fail makes the doctor exit non-zero.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check's finding.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do about a warning or a failure.
	Fix string `json:"fix,omitempty"`
}

// Engine CLIs the doctor knows: the engine's name, its binary and the
// credential item it needs.
var knownEngines = map[string]struct {
	bin, item string
	// supported checks what the CLI printed for --version; nil where
	// support is decided by the protocol version the CLI answers at start
	// (Copilot).
	supported func(out string) (string, error)
}{
	"claude":  {"claude", creds.AnthropicAPIKey, versions.Claude},
	"codex":   {"codex", creds.OpenAIAPIKey, versions.Codex},
	"copilot": {"copilot", creds.GitHubToken, nil},
}

// KnownEngines lists the engines whose CLI the doctor can check.
func KnownEngines() []string {
	out := make([]string, 0, len(knownEngines))
	for name := range knownEngines {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Config says what to check. The functions are the doctor's view of the
// machine; tests replace them to stage a broken setup.
type Config struct {
	// StateDir is the supervisor's state folder.
	StateDir string
	// RunnerPath is the runner executable (empty: found as serve finds it).
	RunnerPath string
	// EnginesDir is the pinned install of the agent CLIs
	// ($CORRAL_ENGINES_DIR).
	EnginesDir string
	// Engines are the engines this deployment runs; each one's CLI and
	// credential must be there. The script engine needs neither.
	Engines []string
	// CredentialsFile is serve's --credentials; empty means the keyring.
	CredentialsFile string
	// NATS are the fleet's server URLs; empty when not in a fleet.
	NATS []string

	// WhoAmI is the user the state folder must belong to (default:
	// os.Getuid, the user the supervisor runs as).
	WhoAmI func() int
	// Statfs reports the free and total bytes of the file system holding
	// path (default: statfs(2)).
	Statfs func(path string) (free, total uint64, err error)
	// Keyring returns the credentials in the OS keyring (default:
	// creds.Store{}.All).
	Keyring func() (map[string]string, error)
	// FindRunner finds the runner (default: the supervisor's own rule).
	FindRunner func(path string) (string, error)
	// Cgroups says whether runners could get cgroups of their own here
	// (default: cgroup.Check).
	Cgroups func() error
	// Timeout bounds each dial (default 10s).
	Timeout time.Duration
	// CLITimeout bounds each CLI's --version, and each golden replay
	// (default DefaultCLITimeout).
	CLITimeout time.Duration
	// Replay is `supervisor doctor engines`: the runner and engine checks
	// alone, each engine's CLI also replaying its golden turn.
	Replay bool
}

// DefaultCLITimeout is how long a CLI's --version may take: an npm CLI's
// first run on a fresh home unpacks it (the Copilot CLI about 235 MB), which
// takes a minute or more on a busy machine; a --version that answers has
// done so in well under a second.
const DefaultCLITimeout = 3 * time.Minute

func (c *Config) setDefaults() {
	if c.WhoAmI == nil {
		c.WhoAmI = os.Getuid
	}
	if c.Statfs == nil {
		c.Statfs = statfs
	}
	if c.Keyring == nil {
		c.Keyring = func() (map[string]string, error) { return (&creds.Store{}).All() }
	}
	if c.Cgroups == nil {
		c.Cgroups = cgroup.Check
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.CLITimeout <= 0 {
		c.CLITimeout = DefaultCLITimeout
	}
}

// Run runs every check, those that wait on a program or the network at
// the same time, and returns the results in a fixed order.
func Run(ctx context.Context, cfg Config) []Result {
	cfg.setDefaults()
	checks := []func(context.Context, Config) []Result{
		checkState, checkDisk, checkRunner, checkCgroups, checkEngines, checkCredentials, checkNATS,
	}
	if cfg.Replay {
		checks = []func(context.Context, Config) []Result{checkRunner, checkEngines, checkReplays}
	}
	found := make([][]Result, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i] = check(ctx, cfg)
		}()
	}
	wg.Wait()
	var out []Result
	for _, rs := range found {
		out = append(out, rs...)
	}
	return out
}

// each runs check on every item at the same time (each may wait on a
// program or the network) and returns the results in the items' order.
func each(items []string, check func(string) Result) []Result {
	out := make([]Result, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = check(item)
		}()
	}
	wg.Wait()
	return out
}

// Failed reports whether any result is a failure.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

func ok(check, format string, args ...any) Result {
	return Result{Check: check, Status: OK, Detail: fmt.Sprintf(format, args...)}
}

func failed(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Fail, Detail: fmt.Sprintf(format, args...), Fix: fix}
}

func warned(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Warn, Detail: fmt.Sprintf(format, args...), Fix: fix}
}

// checkCgroups says whether serve --cgroups=auto will put each runner in a
// cgroup of its own; without, it still runs (process groups), so a warning.
func checkCgroups(_ context.Context, cfg Config) []Result {
	if err := cfg.Cgroups(); err != nil {
		return []Result{warned("cgroups", "run the supervisor as root, or as a systemd service with Delegate=yes (docs/deploy.md, Runners' cgroups)",
			"runners will not get cgroups of their own, so a job that leaves a runner's process group can outlive it: %v", err)}
	}
	return []Result{ok("cgroups", "each runner will run in a cgroup (v2) of its own")}
}
