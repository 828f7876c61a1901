package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/corral-dev/corral/internal/buildinfo"
)

// runHealth prints the daemon's /v1/health as JSON: a container's health
// check or a Kubernetes exec probe runs it, reaching the daemon through its
// socket with no token to hand out.
func runHealth(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "health", "", "Print the running supervisor's health (its build, live sessions, readiness) as JSON. "+
		"Exits 1 when it does not answer or is not ready.")
	version := fs.Bool("client-version", false, "print this program's own build instead, without asking the supervisor")
	c, _, err := simple(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	if *version {
		raw, _ := json.Marshal(buildinfo.Read())
		fmt.Fprintln(e.stdout, string(raw))
		return nil
	}
	h, err := c.Health(ctx)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(h)
	fmt.Fprintln(e.stdout, string(raw))
	if !h.Ready {
		return exitStatus(1)
	}
	return nil
}
