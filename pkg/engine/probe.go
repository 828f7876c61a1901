package engine

import (
	"context"

	"github.com/corral-dev/corral/pkg/api"
)

// Prober is implemented by engines that can tell, without starting a
// conversation, whether a session could start: their CLI found and of a
// supported version, the credential their sign-in needs present, and, when
// asked, accepted by the model endpoint. A shell shows the answer in its
// "new session" dialog (GET /v1/engines).
//
// A probe reports what it found in its checks and never fails as a whole.
// It starts no session and writes nothing a session would read.
type Prober interface {
	Probe(ctx context.Context, opts ProbeOptions) ProbeResult
}

// ProbeOptions is what a probe may use.
type ProbeOptions struct {
	// Config, Credentials and Env are as in StartOptions: the settings a
	// session would get, the secrets the engine may use, the base
	// environment for children.
	Config      map[string]string
	Credentials map[string]string
	Env         []string
	// ModelEndpoint is the endpoint to try the credential against; empty
	// means the engine's default.
	ModelEndpoint string
	// Accept asks for the check that sends the credential to the model
	// endpoint (check name "accepted"); without it that check is skipped.
	Accept bool
}

// Check names.
const (
	CheckCLI         = "cli"
	CheckCredentials = "credentials"
	CheckAccepted    = "accepted"
)

// ProbeResult is what a probe found.
type ProbeResult struct {
	// CLI is the agent CLI as found; nil for an engine without one.
	CLI    *api.EngineCLI    `json:"cli,omitempty"`
	Checks []api.EngineCheck `json:"checks"`
}

// Ready reports whether no check failed.
func (r ProbeResult) Ready() bool {
	_, failed := r.Failed()
	return !failed
}

// Failed returns the first failed check.
func (r ProbeResult) Failed() (api.EngineCheck, bool) {
	for _, c := range r.Checks {
		if c.Status == api.CheckFailed {
			return c, true
		}
	}
	return api.EngineCheck{}, false
}
