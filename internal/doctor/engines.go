package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
)

// checkRunner checks that serve will find the runner.
func checkRunner(_ context.Context, cfg Config) []Result {
	const check = "runner"
	path, err := findRunner(cfg)
	if err != nil {
		return []Result{failed(check, "install runner beside the supervisor (make build puts both in bin/) or pass --runner", "%v", err)}
	}
	return []Result{ok(check, "%s", path)}
}

// findRunner finds the runner as serve would.
func findRunner(cfg Config) (string, error) {
	if cfg.FindRunner != nil {
		return cfg.FindRunner(cfg.RunnerPath)
	}
	if cfg.RunnerPath != "" {
		return cfg.RunnerPath, nil
	}
	return exec.LookPath("runner")
}

// checkEngines checks that each engine's CLI is installed, answers
// --version, and is of a version Corral supports (internal/engines/versions,
// the check the engine makes when a session starts; docs/engines.md).
func checkEngines(ctx context.Context, cfg Config) []Result {
	return each(cfg.Engines, func(name string) Result { return checkEngine(ctx, cfg, name) })
}

func checkEngine(ctx context.Context, cfg Config, name string) Result {
	check := "engine " + name
	e, known := knownEngines[name]
	if !known {
		return failed(check, "name engines among: "+strings.Join(KnownEngines(), ", "), "no engine %q is known to the doctor", name)
	}
	path, source, err := locate.Binary(e.bin, map[string]string{locate.KeyEnginesDir: cfg.EnginesDir})
	if err != nil {
		return failed(check, "install the pinned CLIs (deploy/engines/install.sh, into --engines-dir), or leave "+name+" out of --engines if this host does not run it",
			"%v", err)
	}
	version, err := cliVersion(ctx, path, cfg.CLITimeout)
	if err != nil {
		return failed(check, "reinstall the CLI (deploy/engines/install.sh); its runtime (Node.js 20 or newer) must be on PATH", "%s (%s): %v", path, source, err)
	}
	if e.supported != nil {
		if _, err := e.supported(version); err != nil {
			return failed(check, "install a supported CLI (deploy/engines/install.sh, into --engines-dir), or configure the path of one",
				"%s (%s): %v", path, source, err)
		}
		return ok(check, "%s at %s (%s), supported", version, path, source)
	}
	return ok(check, "%s at %s (%s)", version, path, source)
}

// cliVersion runs `path --version` with credentials stripped from its
// environment and returns the first line it printed.
func cliVersion(ctx context.Context, path string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = proc.BaseEnv()
	proc.ConfigureContext(cmd, time.Second)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("--version did not answer within %v (a first run unpacks an npm CLI, the Copilot CLI about 235 MB: give it longer with --cli-timeout)", timeout)
		}
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return "", fmt.Errorf("--version failed (%v): %s", err, msg)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), "\n")
	if line == "" {
		return "", fmt.Errorf("--version printed nothing")
	}
	return line, nil
}

// checkCredentials checks that the credentials serve hands runners can be
// read, and that each engine's is among them.
func checkCredentials(_ context.Context, cfg Config) []Result {
	const check = "credentials"
	var needed []string
	for _, name := range cfg.Engines {
		if e, ok := knownEngines[name]; ok {
			needed = append(needed, e.item)
		}
	}
	if len(needed) == 0 {
		return []Result{ok(check, "no engine checked needs one")}
	}
	var items map[string]string
	where := "the OS keyring (service " + creds.Service + ")"
	if cfg.CredentialsFile != "" {
		where = cfg.CredentialsFile
		store, err := creds.LoadFile(cfg.CredentialsFile)
		if err != nil {
			return []Result{failed(check, "fix the file: a JSON object of item names to secrets, mode 0600 (docs/engines.md)", "%v", err)}
		}
		items = store.File
	} else {
		var err error
		if items, err = cfg.Keyring(); err != nil {
			return []Result{failed(check, "on a host without a keyring service, give serve a credentials file: --credentials FILE (JSON, mode 0600)",
				"%s cannot be read: %v", where, err)}
		}
	}
	var missing []string
	for _, item := range needed {
		if items[item] == "" {
			missing = append(missing, item)
		}
	}
	if len(missing) > 0 {
		fix := "add them to " + where
		if cfg.CredentialsFile == "" {
			fix = fmt.Sprintf("store each in the keyring (secret-tool store --label=corral service %s username ITEM), or use --credentials FILE", creds.Service)
		}
		return []Result{failed(check, fix, "%s has no %s", where, strings.Join(missing, ", "))}
	}
	return []Result{ok(check, "%s has %s", where, strings.Join(needed, ", "))}
}
