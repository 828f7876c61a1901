package codex

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
)

// Probe checks what Start needs, in a CODEX_HOME of its own that it
// removes: the CLI found and of a supported version; for auth=apiKey the
// openai-api-key item (not needed with an endpoint, which then gets no
// key) and, when asked, the key accepted by the endpoint's GET /models; for
// auth=login the CLI's own check, `codex login status`, on a copy of the
// login as Start would make it.
func (e *Engine) Probe(ctx context.Context, opts engine.ProbeOptions) engine.ProbeResult {
	res := engine.ProbeResult{CLI: &api.EngineCLI{Program: "codex"}}
	home, err := os.MkdirTemp("", "corral-codex-probe-")
	if err != nil {
		res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCLI, "%v", err))
		return res
	}
	defer os.RemoveAll(home)
	env := childEnv(opts.Env, home, "")
	bin, cliCheck := probeCLI(ctx, opts.Config, env, res.CLI)
	res.Checks = append(res.Checks, cliCheck)

	auth := opts.Config[KeyAuth]
	switch auth {
	case "", authAPIKey:
	case authLogin:
		res.Checks = append(res.Checks, probeLogin(ctx, opts, bin, home, env),
			engineprobe.Skipped(engine.CheckAccepted, "auth=login: the CLI's own login is used as it is"))
		return res
	default:
		res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCredentials, "config %s=%q: want %q or %q", KeyAuth, auth, authAPIKey, authLogin))
		return res
	}
	key := opts.Credentials[CredentialItem]
	switch {
	case key != "":
		res.Checks = append(res.Checks, engineprobe.Credential(CredentialItem, opts.Credentials))
	case opts.ModelEndpoint != "":
		res.Checks = append(res.Checks, engineprobe.OK(engine.CheckCredentials, "no %s: requests to %s carry no key", CredentialItem, opts.ModelEndpoint))
	default:
		c := engineprobe.Credential(CredentialItem, opts.Credentials)
		c.Detail += ", or set auth=login to use the Codex CLI's own login"
		res.Checks = append(res.Checks, c)
	}
	switch {
	case !opts.Accept:
		res.Checks = append(res.Checks, engineprobe.NotAsked())
	case key == "":
		res.Checks = append(res.Checks, engineprobe.Skipped(engine.CheckAccepted, "no %s to try", CredentialItem))
	default:
		base := defaultBaseURL
		if opts.ModelEndpoint != "" {
			if base, err = baseURL(opts.ModelEndpoint); err != nil {
				res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckAccepted, "%v", err))
				return res
			}
		}
		h := http.Header{"Authorization": {"Bearer " + key}}
		res.Checks = append(res.Checks, engineprobe.Models(ctx, engineprobe.EndpointURL(base, "/models"), h, CredentialItem))
	}
	return res
}

// probeCLI finds the CLI and checks its version as Start does.
func probeCLI(ctx context.Context, config map[string]string, env []string, cli *api.EngineCLI) (string, api.EngineCheck) {
	bin, source, err := locate.Binary("codex", config)
	if err != nil {
		return "", engineprobe.Failed(engine.CheckCLI, "%v; Corral needs codex-cli %s", err, supportedRange)
	}
	cli.Path, cli.Source = bin, source
	run := bin
	if native, extra, ok := nativeBinary(bin); ok {
		run, env = native, withEnv(env, extra...)
	}
	version, err := checkVersion(ctx, run, env)
	cli.Version = version
	if err != nil {
		return bin, engineprobe.Failed(engine.CheckCLI, "%v", err)
	}
	return bin, engineprobe.OK(engine.CheckCLI, "codex-cli %s at %s (%s)", version, bin, source)
}

// probeLogin copies the CLI's login into home, as Start does, and asks the
// CLI whether it is signed in.
func probeLogin(ctx context.Context, opts engine.ProbeOptions, bin, home string, env []string) api.EngineCheck {
	if bin == "" {
		return engineprobe.Skipped(engine.CheckCredentials, "auth=login: no CLI to check the login with")
	}
	if err := prepareHome(home, settings{}, engine.StartOptions{Config: opts.Config, Env: opts.Env}, nil); err != nil {
		return engineprobe.Failed(engine.CheckCredentials, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "login", "status")
	cmd.Env = env
	cmd.Dir = home
	proc.ConfigureContext(cmd, time.Second)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	status := lastStatusLine(out.String())
	if err != nil || !strings.HasPrefix(status, "Logged in") {
		return engineprobe.Failed(engine.CheckCredentials, "auth=login: `codex login status` says %q: run `codex login` (or set %s to where its login is)", status, KeyLoginHome)
	}
	return engineprobe.OK(engine.CheckCredentials, "auth=login: %s (login copied from %s)", status, loginSource(opts))
}

// lastStatusLine is the last line of the CLI's output that is not one of
// its warnings.
func lastStatusLine(out string) string {
	var last string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "WARNING") {
			last = line
		}
	}
	return last
}

func loginSource(opts engine.ProbeOptions) string {
	if src := opts.Config[KeyLoginHome]; src != "" {
		return src
	}
	return filepath.Join(envValue(opts.Env, "HOME"), ".codex")
}
