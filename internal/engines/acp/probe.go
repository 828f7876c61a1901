package acp

import (
	"context"
	"os"
	"os/exec"
	"strings"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
)

// Probe checks what Start needs before it runs the agent: its settings (a
// command, or a preset whose programs are installed), the agent's program
// found, and the credentials its credentialEnv hands it (the claude-code
// preset's: anthropic-api-key, which an endpoint may do without). Whether
// the agent accepts them, only the agent knows: it is not asked.
func (e *Engine) Probe(ctx context.Context, opts engine.ProbeOptions) engine.ProbeResult {
	res := engine.ProbeResult{CLI: &api.EngineCLI{Program: "agent"}}
	dir, err := os.MkdirTemp("", "corral-acp-probe-")
	if err != nil {
		res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCLI, "%v", err))
		return res
	}
	defer os.RemoveAll(dir)
	s, err := newSettings(engine.StartOptions{Dir: dir, Cwd: dir, Config: opts.Config, Credentials: opts.Credentials, Env: opts.Env, ModelEndpoint: opts.ModelEndpoint})
	if err != nil {
		res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCLI, "%v", err))
		return res
	}
	if s.preset != "" {
		res.CLI.Program = s.preset
	}
	res.Checks = append(res.Checks, probeAgent(s, res.CLI), probeCredentials(opts), engineprobe.Skipped(engine.CheckAccepted, "only the agent knows whether it accepts its credentials"))
	return res
}

// probeAgent finds the agent's program as exec would.
func probeAgent(s settings, cli *api.EngineCLI) api.EngineCheck {
	path, err := exec.LookPath(s.argv[0])
	if err != nil {
		return engineprobe.Failed(engine.CheckCLI, "the agent's program %q: %v", s.argv[0], err)
	}
	cli.Path, cli.Source = path, "config"
	if s.preset != "" {
		cli.Source = "pinned"
		// The preset's program is node; the agent is its script.
		if len(s.argv) > 1 {
			cli.Path = s.argv[1]
		}
	}
	return engineprobe.OK(engine.CheckCLI, "the agent runs as: %s", strings.Join(s.argv, " "))
}

// probeCredentials checks the items credentialEnv names (the preset's by
// default).
func probeCredentials(opts engine.ProbeOptions) api.EngineCheck {
	credEnv := opts.Config[ConfigCredentialEnv]
	if strings.TrimSpace(opts.Config[ConfigCommand]) == "" {
		credEnv = orDefault(credEnv, "ANTHROPIC_API_KEY=anthropic-api-key")
	}
	pairs, err := parseCredentialEnv(credEnv)
	if err != nil {
		return engineprobe.Failed(engine.CheckCredentials, "%v", err)
	}
	if len(pairs) == 0 {
		return engineprobe.Skipped(engine.CheckCredentials, "no credential is handed to the agent (%s): it signs in its own way", ConfigCredentialEnv)
	}
	var missing []string
	for _, p := range pairs {
		if opts.Credentials[p[1]] == "" {
			missing = append(missing, p[1])
		}
	}
	switch {
	case len(missing) == 0:
		return engineprobe.OK(engine.CheckCredentials, "set: %s", credEnv)
	case opts.ModelEndpoint != "":
		return engineprobe.OK(engine.CheckCredentials, "no %s: requests to %s carry none", strings.Join(missing, ", "), opts.ModelEndpoint)
	}
	return engineprobe.Credential(missing[0], opts.Credentials)
}
