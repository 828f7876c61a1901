package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/corral-dev/corral/internal/watch"
	"github.com/corral-dev/corral/pkg/client"
)

func runWatch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "watch", "[ID]", watch.Help+"\n\nWith --json, the same stream as NDJSON for a program: a session's event lines, or every session's multiplexed items (GET /v1/events), one JSON object a line, never prompting.")
	var o watch.Options
	o.RegisterFlags(fs)
	c, pos, err := simple(e, fs, args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		o.Session = pos[0]
	}
	if o.From < 0 {
		return usagef("--from %d: want a seq of 1 or more", o.From)
	}
	if e.json {
		return watchJSON(ctx, e, c, o)
	}
	// stdin must be the real terminal for interactive review.
	return watch.Run(ctx, c, o, os.Stdin, e.stdout, e.stderr)
}

// watchJSON prints what watch shows as NDJSON: one session's events, or
// every session's items from the start of their logs. Interrupting it is
// its normal end; a failure ends it with an envelope line (Main).
func watchJSON(ctx context.Context, e *env, c *client.Client, o watch.Options) error {
	next, stop, err := watchSource(ctx, c, o)
	if err != nil {
		return err
	}
	defer stop()
	for {
		line, err := next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		if _, err := e.stdout.Write(append(line, '\n')); err != nil {
			return err
		}
	}
}

// watchSource opens the stream watchJSON prints: its lines, one by one.
func watchSource(ctx context.Context, c *client.Client, o watch.Options) (next func() ([]byte, error), stop func() error, err error) {
	if o.Session != "" {
		from := o.From
		if from < 1 {
			from = 1
		}
		st, err := c.Events(ctx, o.Session, client.EventsOptions{From: from, Follow: o.Follow})
		if err != nil {
			return nil, nil, err
		}
		return st.Next, st.Close, nil
	}
	st, err := c.Feed(ctx, client.FeedOptions{FromStart: o.From == 0})
	if err != nil {
		return nil, nil, err
	}
	return func() ([]byte, error) {
		it, err := st.Next()
		if err != nil {
			return nil, err
		}
		return json.Marshal(it)
	}, st.Close, nil
}
