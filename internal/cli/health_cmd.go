package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

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
