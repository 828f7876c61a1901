package executor

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/corral-dev/corral/internal/graph/route"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// ProbeTimeout bounds one readiness probe.
const ProbeTimeout = 90 * time.Second

// probePrompt is what a probe asks the model.
const probePrompt = "This is a readiness check. Reply with the single word READY and do nothing else."

// Prober probes an engine by running one short turn in a throwaway
// session: it starts only when the CLI is there, and ends done only when
// the credentials work and the model answers. The session runs read-only
// and unattended in an empty folder, and is deleted afterwards.
type Prober struct {
	Sessions Sessions
}

var _ route.Prober = Prober{}

// Probe runs the probe turn.
func (p Prober) Probe(ctx context.Context, t route.Target) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "corral-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	id, err := p.Sessions.Create(ctx, wire.Spec{Engine: t.Engine, Model: t.Model, ModelEndpoint: t.Endpoint,
		Cwd: dir, Mode: "readonly", Unattended: true})
	if err != nil {
		return fmt.Errorf("the session does not start: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		p.Sessions.Delete(dctx, id)
	}()
	if _, err := p.Sessions.Command(ctx, id, command.Send{Text: probePrompt}); err != nil {
		return err
	}
	w, err := Wait(ctx, p.Sessions, id, 1)
	switch {
	case err != nil:
		return err
	case w.State != TurnEnded:
		return fmt.Errorf("the probe turn did not end (%s)", w.State)
	case w.Failure != nil:
		return fmt.Errorf("%s: %s", w.Failure.Code, w.Failure.Message)
	case w.Outcome != "done":
		return fmt.Errorf("the probe turn ended %s", w.Outcome)
	}
	return nil
}
