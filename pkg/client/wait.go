package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/corral-dev/corral/pkg/api"
)

// WaitOptions say what Wait waits for.
type WaitOptions struct {
	// For is what to wait for (api.WaitIdle when empty).
	For api.WaitFor
	// After, when set, makes a turnEnd wait for the first turnEnded past
	// this seq.
	After *int64
}

// waitPoll bounds one long poll; Wait asks again until the condition holds
// or its context ends.
const waitPoll = 5 * time.Minute

// Wait returns when session id's turn ends, it needs a person, or it is
// idle (opts.For), with the events that decided it. When ctx's deadline
// passes first it returns a reply with Met false; a cancelled ctx returns
// its error.
func (c *Client) Wait(ctx context.Context, id string, opts WaitOptions) (*api.WaitReply, error) {
	if opts.For == "" {
		opts.For = api.WaitIdle
	}
	for {
		timeout := waitPoll
		if dl, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(dl))
			if timeout < time.Millisecond {
				return &api.WaitReply{OK: true, For: opts.For}, nil
			}
		}
		q := url.Values{}
		q.Set("for", string(opts.For))
		q.Set("timeout", timeout.Round(time.Millisecond).String())
		if opts.After != nil {
			q.Set("after", strconv.FormatInt(*opts.After, 10))
		}
		// The supervisor answers when its timeout passes; the request
		// outlives ctx's deadline by a margin so that answer, with the
		// status, is what the caller gets, but not a cancellation.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+30*time.Second)
		stop := context.AfterFunc(ctx, func() {
			if errors.Is(ctx.Err(), context.Canceled) {
				cancel()
			}
		})
		var r api.WaitReply
		err := c.call(rctx, http.MethodGet, "/sessions/"+url.PathEscape(id)+"/wait?"+q.Encode(), nil, &r)
		stop()
		cancel()
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		if dl, ok := ctx.Deadline(); r.Met || (ok && time.Until(dl) < time.Millisecond) {
			return &r, nil
		}
	}
}
