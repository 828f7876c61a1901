package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
)

func runCancel(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "cancel", "ID MESSAGE", "Remove a queued message (its id, m4, is in its userMessage event and the status's queue) before its turn starts.")
	c, pos, err := simple(e, fs, args, 2, 2)
	if err != nil {
		return err
	}
	return runCommand(ctx, e, c, pos[0], command.CancelQueued{MessageID: pos[1]})
}

func runWait(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "wait", "ID", "Wait until the session's turn ends (turnEnd), it needs a person (human: an open ask or an edit to review), or it is idle (idle: nothing runs or waits), and print the events that decided it as NDJSON. Exits 1 if the timeout passes first.")
	waitFor := fs.String("for", string(api.WaitIdle), "what to wait for: turnEnd, human or idle")
	after := fs.Int64("after", -1, "turnEnd: the first turn that ends past this seq (default: the turn under way, or none)")
	timeout := fs.Duration("timeout", 0, "give up after this long (default: never)")
	c, pos, err := simple(e, fs, args, 1, 1)
	if err != nil {
		return err
	}
	opts := client.WaitOptions{For: api.WaitFor(*waitFor)}
	if !slices.Contains(api.WaitFors(), opts.For) {
		return usagef("--for %q: want turnEnd, human or idle", *waitFor)
	}
	if *after >= 0 {
		opts.After = after
	}
	if *timeout < 0 {
		return usagef("--timeout must not be negative")
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	r, err := c.Wait(ctx, pos[0], opts)
	if errors.Is(err, context.Canceled) {
		return exitStatus(1) // interrupted
	}
	if err != nil {
		return err
	}
	err = e.emit(r, func(w io.Writer) error {
		for _, ev := range r.Events {
			if _, err := fmt.Fprintf(w, "%s\n", ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !r.Met {
		if !e.json {
			fmt.Fprintf(e.stderr, "supervisor wait: %s did not happen within %s\n", opts.For, *timeout)
		}
		return exitStatus(1)
	}
	return nil
}
