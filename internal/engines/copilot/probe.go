package copilot

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// versionPattern finds the version in `copilot --version`'s first line,
// "GitHub Copilot CLI 1.0.102.".
var versionPattern = regexp.MustCompile(`(\d+\.\d+\.\d+)`)

// Probe checks what Start checks before it runs the CLI (the settings and
// the credential they need: github-token, or with a model endpoint the
// provider's key, which that endpoint may do without), that the CLI is
// found and answers --version, and, when asked and a provider key is set,
// that the endpoint's GET /models accepts it. The CLI's protocol version is
// checked when a session connects; a GitHub token only by GitHub, when a
// session's CLI signs in.
func (e *Engine) Probe(ctx context.Context, opts engine.ProbeOptions) engine.ProbeResult {
	res := engine.ProbeResult{CLI: &api.EngineCLI{Program: "copilot"}}
	dir, err := os.MkdirTemp("", "corral-copilot-probe-")
	if err != nil {
		res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCLI, "%v", err))
		return res
	}
	defer os.RemoveAll(dir)
	s, err := loadSettings(engine.StartOptions{
		Dir: dir, Cwd: dir, Host: probeHost{}, Config: opts.Config, Credentials: opts.Credentials,
		Env: opts.Env, ModelEndpoint: opts.ModelEndpoint,
	})
	var failure *engine.Failure
	switch {
	case errors.As(err, &failure) && failure.Code == event.FailSignInExpired:
		// The settings are whole but for the credential: the CLI can
		// still be checked.
		s.env = childEnv(opts.Env, s)
		res.Checks = append(res.Checks, probeCLI(ctx, s, res.CLI),
			engineprobe.Failed(engine.CheckCredentials, "%s", failure.Message), engineprobe.Skipped(engine.CheckAccepted, "no credential to try"))
		return res
	case err != nil:
		res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCLI, "%v", err))
		return res
	}
	res.Checks = append(res.Checks, probeCLI(ctx, s, res.CLI))
	switch {
	case s.auth == authLogin:
		res.Checks = append(res.Checks,
			engineprobe.Skipped(engine.CheckCredentials, "auth=login: the CLI's own sign-in is checked when a session starts"),
			engineprobe.Skipped(engine.CheckAccepted, "auth=login: the CLI's own sign-in is used as it is"))
	case s.provider == nil:
		res.Checks = append(res.Checks, engineprobe.OK(engine.CheckCredentials, "github-token is set"),
			engineprobe.Skipped(engine.CheckAccepted, "a GitHub token is checked by GitHub when a session's CLI signs in"))
	case s.provider.APIKey == "":
		res.Checks = append(res.Checks, engineprobe.OK(engine.CheckCredentials, "no provider key: requests to %s carry none", s.provider.BaseURL),
			engineprobe.Skipped(engine.CheckAccepted, "no provider key to try"))
	default:
		res.Checks = append(res.Checks, engineprobe.OK(engine.CheckCredentials, "the %s provider's key is set", s.provider.Type))
		switch {
		case !opts.Accept:
			res.Checks = append(res.Checks, engineprobe.NotAsked())
		case s.provider.Type == "anthropic":
			res.Checks = append(res.Checks, engineprobe.Skipped(engine.CheckAccepted, "not checked for providerType anthropic"))
		default:
			h := http.Header{"Authorization": {"Bearer " + s.provider.APIKey}}
			res.Checks = append(res.Checks, engineprobe.Models(ctx, engineprobe.EndpointURL(s.provider.BaseURL, "/models"), h, "the provider's key"))
		}
	}
	return res
}

// probeCLI runs the CLI's --version with the session's environment (its
// shared cache folder, where a first run unpacks the CLI).
func probeCLI(ctx context.Context, s settings, cli *api.EngineCLI) api.EngineCheck {
	if s.bin == "" {
		return engineprobe.Failed(engine.CheckCLI, "no copilot CLI found")
	}
	cli.Path, cli.Source = s.bin, s.binSource
	ctx, cancel := context.WithTimeout(ctx, engineprobe.PerEngine)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, "--version")
	cmd.Env = s.env
	proc.ConfigureContext(cmd, time.Second)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return engineprobe.Failed(engine.CheckCLI, "%s --version failed (%v): %s", s.bin, err, bytes.TrimSpace(out.Bytes()))
	}
	m := versionPattern.FindSubmatch(out.Bytes())
	if m == nil {
		return engineprobe.Failed(engine.CheckCLI, "%s --version printed %q, not a Copilot CLI version", s.bin, bytes.TrimSpace(out.Bytes()))
	}
	cli.Version = string(m[1])
	return engineprobe.OK(engine.CheckCLI, "GitHub Copilot CLI %s at %s (%s); its protocol version is checked when a session starts", cli.Version, s.bin, s.binSource)
}

// probeHost stands in for a runner: a probe starts no conversation, so
// nothing calls it.
type probeHost struct{}

func (probeHost) Emit(event.Type, any) {}
func (probeHost) Permit(context.Context, engine.ToolCall) engine.Verdict {
	return engine.Verdict{}
}
func (probeHost) TakeSteers(string) []string { return nil }
