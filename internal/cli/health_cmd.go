package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/corral-dev/corral/internal/buildinfo"
	"github.com/corral-dev/corral/pkg/api"
)

// runHealth prints the daemon's /v1/health as JSON: a container's health
// check or a Kubernetes exec probe runs it, reaching the daemon through its
// socket with no token to hand out.
func runHealth(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "health", "", "Print the running supervisor's health (its build, live sessions, readiness) as JSON. "+
		"Exits 1 when it does not answer or is not ready.")
	version := fs.Bool("client-version", false, "print this program's own build instead, without asking the supervisor")
	wait := fs.Duration("wait", 0, "ask again until the supervisor answers ready or this long has passed (after `supervisor serve &`)")
	c, _, err := simple(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	oneLine := func(v any) func(io.Writer) error {
		return func(w io.Writer) error {
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(w, string(raw))
			return err
		}
	}
	if *version {
		info := buildinfo.Read()
		return e.emit(info, oneLine(info))
	}
	h, err := c.Health(ctx)
	if *wait > 0 {
		h, err = waitReady(ctx, *wait, h, err, c.Health)
	}
	if err != nil {
		return err
	}
	if err := e.emit(h, oneLine(h)); err != nil {
		return err
	}
	if !h.Ready {
		return exitStatus(1)
	}
	return nil
}

// healthPoll is how often health --wait asks a supervisor that is starting.
const healthPoll = 50 * time.Millisecond

// waitReady asks health again until it answers ready or wait has passed,
// and returns the last answer. A supervisor just started in the background
// has no socket for its first few milliseconds: a script waits for it here
// instead of sleeping.
func waitReady(ctx context.Context, wait time.Duration, h *api.HealthReply, err error, health func(context.Context) (*api.HealthReply, error)) (*api.HealthReply, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(healthPoll)
	defer tick.Stop()
	for err != nil || !h.Ready {
		select {
		case <-ctx.Done():
			return h, err
		case <-tick.C:
		}
		next, nextErr := health(ctx)
		if ctx.Err() != nil {
			return h, err // the last whole answer, not the deadline's
		}
		h, err = next, nextErr
	}
	return h, err
}
