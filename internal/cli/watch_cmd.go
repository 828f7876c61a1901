package cli

import (
	"context"
	"os"

	"github.com/corral-dev/corral/internal/watch"
)

func runWatch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "watch", "[ID]", watch.Help)
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
	// stdin must be the real terminal for interactive review.
	return watch.Run(ctx, c, o, os.Stdin, e.stdout, e.stderr)
}
