package claude

import (
	"context"
	"net/http"
	"os"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
)

// defaultAPI is where the CLI sends its requests without a model endpoint.
const defaultAPI = "https://api.anthropic.com"

// anthropicVersion is the API version the accepted check asks for.
const anthropicVersion = "2023-06-01"

// Probe checks what Start needs: the CLI found and of a supported version
// (as Start checks it), the anthropic-api-key item, and, when asked, the
// key accepted by the model endpoint's GET /v1/models. The CLI has no check
// of its own that asks the API (`claude auth status` only reports that a
// key is in its environment).
func (e *Engine) Probe(ctx context.Context, opts engine.ProbeOptions) engine.ProbeResult {
	res := engine.ProbeResult{CLI: &api.EngineCLI{Program: "claude"}}
	res.Checks = append(res.Checks, probeCLI(ctx, opts, res.CLI))
	key := opts.Credentials[CredentialItem]
	res.Checks = append(res.Checks, engineprobe.Credential(CredentialItem, opts.Credentials))
	switch {
	case !opts.Accept:
		res.Checks = append(res.Checks, engineprobe.NotAsked())
	case key == "":
		res.Checks = append(res.Checks, engineprobe.Skipped(engine.CheckAccepted, "no %s to try", CredentialItem))
	default:
		base := opts.ModelEndpoint
		if base == "" {
			base = defaultAPI
		}
		h := http.Header{"X-Api-Key": {key}, "Anthropic-Version": {anthropicVersion}}
		res.Checks = append(res.Checks, engineprobe.Models(ctx, engineprobe.EndpointURL(base, "/v1/models"), h, CredentialItem))
	}
	return res
}

// probeCLI finds the CLI and checks its version as Start does, in a
// configuration folder of its own that it removes.
func probeCLI(ctx context.Context, opts engine.ProbeOptions, cli *api.EngineCLI) api.EngineCheck {
	bin, source, err := locate.Binary("claude", opts.Config)
	if err != nil {
		return engineprobe.Failed(engine.CheckCLI, "%v; need %s", err, supportedRange)
	}
	cli.Path, cli.Source = bin, source
	dir, err := os.MkdirTemp("", "corral-claude-probe-")
	if err != nil {
		return engineprobe.Failed(engine.CheckCLI, "%v", err)
	}
	defer os.RemoveAll(dir)
	base := opts.Env
	if base == nil {
		base = proc.BaseEnv()
	}
	version, err := checkVersion(ctx, bin, buildEnv(base, dir, ""))
	cli.Version = version
	if err != nil {
		return engineprobe.Failed(engine.CheckCLI, "claude CLI %s (from %s): %v", bin, source, err)
	}
	return engineprobe.OK(engine.CheckCLI, "Claude Code %s at %s (%s)", version, bin, source)
}
